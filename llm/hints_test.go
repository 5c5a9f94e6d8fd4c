package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestRetryHint(t *testing.T) {
	// The server's clock is years away from the local one, so a hint read
	// against the wrong clock comes out negative (ignored) or absurd.
	server := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	date := server.Format(http.TimeFormat)
	now := time.Now()
	unix := func(d time.Duration) string { return strconv.FormatInt(server.Add(d).Unix(), 10) }
	unixMs := func(d time.Duration) string { return strconv.FormatInt(server.Add(d).UnixMilli(), 10) }
	shanghai := time.FixedZone("CST", 8*3600)

	tests := []struct {
		name   string
		status int // 0 means 429
		header map[string]string
		body   string
		want   time.Duration
	}{
		{"nothing", 0, nil, "", 0},
		{"retry-after-ms", 0, map[string]string{"retry-after-ms": "1500"}, "", 1500 * time.Millisecond},
		{"retry-after-ms fractional", 0, map[string]string{"retry-after-ms": "12.5"}, "", 12500 * time.Microsecond},
		{"retry-after-ms invalid falls through", 0, map[string]string{"retry-after-ms": "soon", "Retry-After": "2"}, "", 2 * time.Second},
		{"retry-after-ms negative ignored", 0, map[string]string{"retry-after-ms": "-5"}, "", 0},
		{"retry-after-ms NaN ignored", 0, map[string]string{"retry-after-ms": "NaN"}, "", 0},
		{"Retry-After seconds", 0, map[string]string{"Retry-After": "3"}, "", 3 * time.Second},
		{"Retry-After fractional", 0, map[string]string{"Retry-After": "1.5"}, "", 1500 * time.Millisecond},
		{"Retry-After negative ignored", 0, map[string]string{"Retry-After": "-1"}, "", 0},
		{"Retry-After zero ignored", 0, map[string]string{"Retry-After": "0"}, "", 0},
		{"Retry-After absurd ignored", 0, map[string]string{"Retry-After": "1e30"}, "", 0},
		{"Retry-After infinite ignored", 0, map[string]string{"Retry-After": "+Inf"}, "", 0},
		{"Retry-After date against the Date header", 0,
			map[string]string{"Date": date, "Retry-After": server.Add(30 * time.Second).Format(http.TimeFormat)}, "", 30 * time.Second},
		{"Retry-After date in the past ignored", 0,
			map[string]string{"Date": date, "Retry-After": server.Add(-30 * time.Second).Format(http.TimeFormat)}, "", 0},
		{"Retry-After garbage", 0, map[string]string{"Retry-After": "later, please"}, "", 0},
		{"reset-requests 1s", 0, map[string]string{"x-ratelimit-reset-requests": "1s"}, "", time.Second},
		{"reset-requests 6m0s", 0, map[string]string{"x-ratelimit-reset-requests": "6m0s"}, "", 6 * time.Minute},
		{"reset-tokens 20ms", 0, map[string]string{"x-ratelimit-reset-tokens": "20ms"}, "", 20 * time.Millisecond},
		{"reset plain seconds", 0, map[string]string{"x-ratelimit-reset": "5"}, "", 5 * time.Second},
		{"reset Unix seconds", 0, map[string]string{"Date": date, "x-ratelimit-reset-requests": unix(12 * time.Second)}, "", 12 * time.Second},
		{"reset Unix milliseconds", 0, map[string]string{"Date": date, "x-ratelimit-reset-requests": unixMs(1500 * time.Millisecond)}, "", 1500 * time.Millisecond},
		{"reset RFC 3339 with a zone", 0,
			map[string]string{"Date": date, "x-ratelimit-reset-tokens": server.Add(45 * time.Second).In(shanghai).Format(time.RFC3339)}, "", 45 * time.Second},
		{"reset Unix seconds in the past ignored", 0, map[string]string{"Date": date, "x-ratelimit-reset": unix(-time.Minute)}, "", 0},
		{"reset negative ignored", 0, map[string]string{"x-ratelimit-reset-requests": "-1s"}, "", 0},
		{"reset between seconds and timestamps ignored", 0, map[string]string{"x-ratelimit-reset-requests": "500000000"}, "", 0},
		{"reset garbage", 0, map[string]string{"x-ratelimit-reset-requests": "soon"}, "", 0},
		{"larger of requests and tokens", 0,
			map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}, "", 6 * time.Minute},
		{"reset of the bucket that ran dry", 0,
			map[string]string{"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-remaining-requests": "10",
				"x-ratelimit-reset-tokens": "20ms", "x-ratelimit-remaining-tokens": "0"}, "", 20 * time.Millisecond},
		{"reset ignored on a 500", 500, map[string]string{"x-ratelimit-reset-tokens": "6m0s"}, "", 0},
		{"Retry-After honoured on a 503", 503, map[string]string{"Retry-After": "4"}, "", 4 * time.Second},
		{"body data.retry_after_seconds (Doubao)", 0, nil,
			`{"error":{"code":"RateLimitExceeded","message":"slow down"},"data":{"retry_after_seconds":3}}`, 3 * time.Second},
		{"body error.retry_after_seconds", 0, nil, `{"error":{"message":"slow down","retry_after_seconds":2.5}}`, 2500 * time.Millisecond},
		{"body retry_after_seconds", 0, nil, `{"retry_after_seconds":7}`, 7 * time.Second},
		{"body retry_after", 0, nil, `{"retry_after":4}`, 4 * time.Second},
		{"body number as a string", 0, nil, `{"data":{"retry_after_seconds":"6"}}`, 6 * time.Second},
		{"body with error as a string", 0, nil, `{"error":"slow down","retry_after":2}`, 2 * time.Second},
		{"body after white space", 0, nil, "\n  {\"retry_after\":1}", time.Second},
		{"body negative ignored", 0, nil, `{"retry_after":-3}`, 0},
		{"body garbage", 0, nil, `{"retry_after":"soon"}`, 0},
		{"body not JSON", 0, nil, "<html>busy</html>", 0},
		{"body array", 0, nil, `[{"retry_after":1}]`, 0},
		{"retry-after-ms beats Retry-After", 0, map[string]string{"retry-after-ms": "250", "Retry-After": "9"}, "", 250 * time.Millisecond},
		{"Retry-After beats reset", 0, map[string]string{"Retry-After": "9", "x-ratelimit-reset-requests": "1s"}, "", 9 * time.Second},
		{"reset beats body", 0, map[string]string{"x-ratelimit-reset-requests": "1s"}, `{"retry_after":9}`, time.Second},
		{"X-Retry-In (Traefik)", 0, map[string]string{"X-Retry-In": "1.5s"}, "", 1500 * time.Millisecond},
		{"X-Retry-In in minutes", 0, map[string]string{"X-Retry-In": "3m0s"}, "", 3 * time.Minute},
		{"X-Retry-In beats the rounded Retry-After", 0, map[string]string{"X-Retry-In": "1.2s", "Retry-After": "2"}, "", 1200 * time.Millisecond},
		{"retry-after-ms beats X-Retry-In", 0, map[string]string{"retry-after-ms": "300", "X-Retry-In": "1.2s"}, "", 300 * time.Millisecond},
		{"X-Retry-In negative falls through", 0, map[string]string{"X-Retry-In": "-1s", "Retry-After": "2"}, "", 2 * time.Second},
		{"X-Retry-In garbage falls through", 0, map[string]string{"X-Retry-In": "soon", "Retry-After": "2"}, "", 2 * time.Second},
		{"X-Retry-In absurd ignored", 0, map[string]string{"X-Retry-In": "2562047h"}, "", 0},
		{"IETF reset of the spent policy", 0, map[string]string{"RateLimit-Policy": `"a";q=10;w=60, "b";q=5;w=1`,
			"RateLimit": `"a";r=0;t=40, "b";r=5;t=1`}, "", 40 * time.Second},
		{"IETF reset ignored on a 503", 503, map[string]string{"RateLimit": `"a";r=0;t=40`}, "", 0},
		{"Kong: the spent window's reset", 0, map[string]string{"X-RateLimit-Limit-Minute": "10", "X-RateLimit-Remaining-Minute": "0",
			"RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": "17"}, "", 17 * time.Second},
		{"older draft reset", 0, map[string]string{"RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": "8"}, "", 8 * time.Second},
		{"X-RateLimit-Reset as a Unix time", 0, map[string]string{"Date": date, "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(25 * time.Second)}, "", 25 * time.Second},
		{"body when headers are unusable", 0, map[string]string{"retry-after-ms": "x", "Retry-After": "-2", "x-ratelimit-reset": "y"},
			`{"retry_after":9}`, 9 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := tt.status
			if status == 0 {
				status = http.StatusTooManyRequests
			}
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryHint(status, h, []byte(tt.body), now); got != tt.want {
				t.Errorf("retryHint(%d, %v, %q) = %v, want %v", status, h, tt.body, got, tt.want)
			}
		})
	}
}

// TestRetryHintLocalClock checks that without a Date header an HTTP-date is
// measured against the local time of arrival.
func TestRetryHintLocalClock(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{"Retry-After": {now.Add(20 * time.Second).Format(http.TimeFormat)}}
	if got := retryHint(429, h, nil, now); got != 20*time.Second {
		t.Errorf("retryHint(429, %v, nil, %v) = %v, want 20s", h, now, got)
	}
}

// TestResetUnixNearNow: a reset given as a Unix time is told from a delta
// by being near the server's now, not by its size: a clock set to 2000
// (as testing/synctest's is) has Unix times under 1e9, which were read as
// a delta of thirty years and dropped.
func TestResetUnixNearNow(t *testing.T) {
	for _, now := range []time.Time{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)} {
		for _, tc := range []struct{ v string }{
			{strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)},
			{strconv.FormatInt(now.Add(30*time.Second).UnixMilli(), 10)},
			{"30"},
		} {
			if d, ok := parseReset(tc.v, now); !ok || d != 30*time.Second {
				t.Errorf("now %v: parseReset(%q) = %v, %v; want 30s", now.Year(), tc.v, d, ok)
			}
		}
		if d, ok := parseReset("150000000", now); ok {
			t.Errorf("now %v: a number far from any now read as %v", now.Year(), d)
		}
	}
}

// TestResetWithinDateSecond: a window's reset given as a Unix time is
// measured from the local arrival when that lies within the second the
// Date header names (express-rate-limit's legacy headers on a window of a
// second: Date cut down to 09:30:30, the reset 09:30:32 the ceiling of
// 09:30:31.7, the answer come at 09:30:30.7, so 1.3 s are left, not the
// Date's 2 s), and from the Date otherwise: a local clock outside its
// second is skewed. The request's own Retry-After date stays against the
// Date, never cut short.
func TestResetWithinDateSecond(t *testing.T) {
	h := http.Header{}
	h.Set("Date", server.Format(http.TimeFormat))
	h.Set("X-RateLimit-Limit", "20")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", unixAt(2*time.Second))
	h.Set("Retry-After", server.Add(2*time.Second).Format(http.TimeFormat))
	for _, tc := range []struct {
		name        string
		arrived     time.Duration // after the Date
		reset, hint time.Duration
	}{
		{"within the Date's second", 700 * time.Millisecond, 1300 * time.Millisecond, 2 * time.Second},
		{"at the Date", 0, 2 * time.Second, 2 * time.Second},
		{"local clock ahead", 1500 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		{"local clock behind", -200 * time.Millisecond, 2 * time.Second, 2 * time.Second},
	} {
		got := parseLimits(h, nil, server.Add(tc.arrived))
		if got.Requests.Reset != tc.reset || got.RetryAfter != tc.hint {
			t.Errorf("%s: reset %v, Retry-After %v; want %v, %v", tc.name, got.Requests.Reset, got.RetryAfter, tc.reset, tc.hint)
		}
	}
}

// TestResetSecondCutDown: a reset in whole seconds up to a second past is
// the end of that second, as servers that cut the window's end down to
// its second write it while the window is open (ulule/limiter's
// X-RateLimit-Reset at 09:30:30.73 says 09:30:30 of a window that ends at
// 09:30:30.9); one exactly at now, or further past, has passed.
func TestResetSecondCutDown(t *testing.T) {
	now := server.Add(730 * time.Millisecond)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{unixAt(0), 270 * time.Millisecond},
		{server.UTC().Format(http.TimeFormat), 270 * time.Millisecond},
		{server.UTC().Format(time.RFC1123), 270 * time.Millisecond},
		{unixAt(time.Second), 270 * time.Millisecond},
		{unixAt(-time.Second), 0},
		{unixMsAt(0), 0}, // milliseconds are not cut down to a second
	} {
		if got, _ := parseReset(tc.v, now); got != tc.want {
			t.Errorf("parseReset(%q) at %v = %v, want %v", tc.v, now.Format(time.StampMilli), got, tc.want)
		}
	}
	if got, _ := parseReset(unixAt(0), server); got != 0 {
		t.Errorf("a reset of now read as %v, want passed", got)
	}
}

// TestResetCoarse: a reset naming a whole second of the clock still ahead
// (a Unix time in seconds, a date) is coarse: the window's end lies
// anywhere in that second (see pace's widened). A delta, milliseconds, or
// a second already past (read as its end) is not. A time of the clock
// finer than seconds is Clock (reading counts it from the send); a delta
// or a whole second is not (see TestResetFromSend).
func TestResetCoarse(t *testing.T) {
	now := server.Add(400 * time.Millisecond)
	for _, tc := range []struct {
		v           string
		want, clock bool
	}{
		{unixAt(60 * time.Second), true, false},
		{server.Add(60 * time.Second).UTC().Format(http.TimeFormat), true, false},
		{unixAt(0), false, false}, // past by 0.4 s: the end of that second already
		{unixMsAt(60 * time.Second), false, true},
		{server.Add(60 * time.Second).UTC().Format(time.RFC3339Nano), false, true},
		{"60", false, false},
		{"1m0s", false, false},
	} {
		for _, names := range [][3]string{
			{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
			{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"},
			{"X-RateLimit-Limit-Minute", "X-RateLimit-Remaining-Minute", "X-RateLimit-Reset-Minute"},
		} {
			h := http.Header{}
			h.Set(names[0], "120")
			h.Set(names[1], "7")
			h.Set(names[2], tc.v)
			got := parseLimits(h, nil, now).Requests
			if got.Coarse != tc.want || !got.Told {
				t.Errorf("%s: %q read coarse %v (told %v), want %v", names[2], tc.v, got.Coarse, got.Told, tc.want)
			}
			if got.Clock != tc.clock {
				t.Errorf("%s: %q read as a time of the clock %v, want %v", names[2], tc.v, got.Clock, tc.clock)
			}
			if r := reading(got, 0); r.Coarse != tc.want {
				t.Errorf("%s: %q: the limiter's reading coarse %v, want %v", names[2], tc.v, r.Coarse, tc.want)
			}
		}
	}
}

// TestResetFromSend: the limiter counts resets from the request's send. A
// reset written as a time of the clock finer than seconds names that
// time, so the time from the send to the answer's arrival is added to
// what was read against the arrival; a delta, and a whole second (see
// reading), are counted from the send as they are.
func TestResetFromSend(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		took time.Duration
		v    string
		want time.Duration
	}{
		{"Unix milliseconds", 50 * ms, unixMsAt(time.Second), 650 * ms},
		{"Unix milliseconds, a long answer", 20 * time.Second, unixMsAt(30 * time.Second), 49600 * ms},
		{"RFC 3339", 50 * ms, server.Add(time.Second).UTC().Format(time.RFC3339Nano), 650 * ms},
		{"a delta", 50 * ms, "1", time.Second},
		{"a Unix second", 50 * ms, unixAt(2 * time.Second), 1600 * ms},
		{"a Unix second, a long answer", 3 * time.Second, unixAt(2 * time.Second), 1600 * ms},
		{"a date, a long answer", 3 * time.Second, server.Add(2 * time.Second).UTC().Format(http.TimeFormat), 1600 * ms},
	} {
		h := http.Header{}
		h.Set("X-RateLimit-Limit", "20")
		h.Set("X-RateLimit-Remaining", "7")
		h.Set("X-RateLimit-Reset", tc.v)
		arrival := server.Add(400 * ms)
		o := outcome(h, nil, false, arrival, arrival.Add(-tc.took))
		if r := o.Requests; !r.Told || r.Reset != tc.want {
			t.Errorf("%s: %q answered in %v, 400ms into a second: reset %v from the send, want %v",
				tc.name, tc.v, tc.took, r.Reset, tc.want)
		}
	}
}

// TestClockResetHeldFromSend: over HTTP, a server whose answers take 300 ms
// says no request is left until 200 ms after each answer, as an RFC 3339
// time (Anthropic's way). The client's next request, the same model's,
// may not reach it before then: counted as a delta from the send, the
// reset ended 300 ms early, when the answer came.
func TestClockResetHeldFromSend(t *testing.T) {
	const took = 300 * time.Millisecond
	var mu sync.Mutex
	var resets, arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		time.Sleep(took)
		reset := time.Now().Add(200 * time.Millisecond)
		mu.Lock()
		resets = append(resets, reset)
		mu.Unlock()
		w.Header().Set("anthropic-ratelimit-requests-limit", "1")
		w.Header().Set("anthropic-ratelimit-requests-remaining", "0")
		w.Header().Set("anthropic-ratelimit-requests-reset", reset.UTC().Format(time.RFC3339Nano))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okBody)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/v1", func(c *Config) {
		c.Limiter = NewLimiterConfig(LimiterConfig{Adapt: true})
	})
	defer c.CloseIdleConnections()
	for range 3 {
		if _, _, err := c.Do(context.Background(), testRequest()); err != nil {
			t.Fatalf("Do = %v", err)
		}
	}
	for i := 1; i < len(arrivals); i++ {
		if early := resets[i-1].Sub(arrivals[i]); early > 5*time.Millisecond {
			t.Errorf("request %d reached the server %v before the reset the answer before it named", i+1, early)
		}
	}
}
