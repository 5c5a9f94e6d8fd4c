package mock

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestHeaderStyles sends three requests to a server allowing 2 a second,
// 200ms into the window, and checks each style's headers on the second
// answer (nothing left) and on the third, refused.
func TestHeaderStyles(t *testing.T) {
	tests := []struct {
		style   string
		ok      map[string]string // headers of the 200; "" means absent
		refused map[string]string // headers of the 429
		ctype   string            // the 429's Content-Type
		body    string            // a part of its body
	}{
		{HeadersOpenAI,
			map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "800ms"},
			map[string]string{"Retry-After": "1", "retry-after-ms": "800", "x-ratelimit-remaining-requests": "0"},
			"application/json", `"type":"requests"`},
		{HeadersIETF,
			map[string]string{"RateLimit-Policy": `"default";q=2;w=1`, "RateLimit": `"default";r=0;t=1`,
				"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "1", "x-ratelimit-limit-requests": ""},
			map[string]string{"Retry-After": "1", "retry-after-ms": "", "RateLimit": `"default";r=0;t=1`},
			"application/json", "rate_limit_exceeded"},
		{HeadersKong,
			map[string]string{"X-RateLimit-Limit-Second": "2", "X-RateLimit-Remaining-Second": "0",
				"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "1"},
			map[string]string{"Retry-After": "1", "X-RateLimit-Remaining-Second": "0"},
			"application/json; charset=utf-8", `{"message":"API rate limit exceeded"}`},
		{HeadersGitHub,
			// 200ms after the Unix time 1_000_000_000 the window ends at ...000.8: rounded up.
			map[string]string{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Used": "2",
				"X-RateLimit-Reset": "1000000001"},
			map[string]string{"Retry-After": "1", "X-RateLimit-Remaining": "0"},
			"application/json", "rate_limit_exceeded"},
		{HeadersTraefik,
			map[string]string{"X-Retry-In": "", "x-ratelimit-limit-requests": "", "RateLimit-Limit": ""},
			map[string]string{"Retry-After": "1", "X-Retry-In": "800ms"},
			"text/plain; charset=utf-8", "Too Many Requests"},
		{HeadersRetryAfter,
			map[string]string{"x-ratelimit-limit-requests": "", "RateLimit-Limit": ""},
			map[string]string{"Retry-After": "1", "retry-after-ms": ""},
			"application/json", `"type":"requests"`},
		{HeadersNone,
			map[string]string{"x-ratelimit-limit-requests": "", "RateLimit": ""},
			map[string]string{"Retry-After": "", "retry-after-ms": "", "x-ratelimit-remaining-requests": ""},
			"text/html", "<html>"},
	}
	for _, tt := range tests {
		t.Run(tt.style, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The bubble's clock starts at midnight UTC 2000-01-01;
				// align to a round Unix second for the github case.
				time.Sleep(time.Unix(1_000_000_000, 0).Sub(time.Now()))
				h := New(Config{RPM: 2, Window: time.Second, Headers: tt.style})
				time.Sleep(200 * time.Millisecond)
				body := chatBody(t, "x", nil)
				serve(h, body)
				ok := serve(h, body)
				refused := serve(h, body)
				if ok.Code != 200 || refused.Code != 429 {
					t.Fatalf("statuses %d, %d; want 200, 429", ok.Code, refused.Code)
				}
				wantHeaders(t, "200", ok.Header(), tt.ok)
				wantHeaders(t, "429", refused.Header(), tt.refused)
				if got := refused.Header().Get("Content-Type"); got != tt.ctype {
					t.Errorf("429 Content-Type = %q, want %q", got, tt.ctype)
				}
				if !strings.Contains(refused.Body.String(), tt.body) {
					t.Errorf("429 body %q lacks %q", refused.Body.String(), tt.body)
				}
			})
		})
	}
}

func wantHeaders(t *testing.T, what string, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// TestIETFBothLimits: with a request and a token limit, the IETF fields
// list both policies.
func TestIETFBothLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{RPM: 20, TPM: 10000, Window: time.Minute, Headers: HeadersIETF})
		rec := serve(h, chatBody(t, strings.Repeat("x", 400), nil)) // 100 tokens
		want := map[string]string{
			"RateLimit-Policy": `"default";q=20;w=60, "tokens";q=10000;w=60`,
			"RateLimit":        `"default";r=19;t=60, "tokens";r=9900;t=60`,
		}
		wantHeaders(t, "200", rec.Header(), want)
	})
}

// TestFalseClaims: the hostile server's random 429s claim the token window
// is spent for 6 minutes, with Retry-After 1, while the real limit is far
// from spent; they are counted apart from real refusals.
func TestFalseClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{FalseClaims: 0.5, Seed: 3})
		claims := 0
		for range 100 {
			rec := serve(h, chatBody(t, "x", nil))
			if rec.Code != 429 {
				continue
			}
			claims++
			wantHeaders(t, "false claim", rec.Header(), map[string]string{"Retry-After": "1",
				"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-limit-tokens": "1000000"})
			if !strings.Contains(rec.Body.String(), `"type":"tokens"`) {
				t.Errorf("false claim body %q does not say tokens", rec.Body.String())
			}
		}
		s := h.Stats()
		if claims < 30 || claims > 70 || s.FalseClaims != int64(claims) || s.RateLimited != 0 || s.OK != int64(100-claims) {
			t.Errorf("%d false claims of 100 at 0.5, Stats %+v", claims, s)
		}
	})
}

// TestConcurrencyLimiter: with LimiterConcurrency, a request beyond
// InFlight in flight gets 429 at once with the latency as its hint, and
// the cap is free again when an answer is sent.
func TestConcurrencyLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{Limiter: LimiterConcurrency, InFlight: 2, Latency: 300 * time.Millisecond, RPM: 1})
		body := chatBody(t, "x", nil)
		start := time.Now()
		codes := make(chan int, 3)
		for range 3 {
			go func() { codes <- serve(h, body).Code }()
		}
		synctest.Wait() // two are in flight, the third has been refused
		if got := <-codes; got != 429 || time.Since(start) != 0 {
			t.Errorf("the third request in flight: %d after %v, want 429 at once", got, time.Since(start))
		}
		if a, b := <-codes, <-codes; a != 200 || b != 200 {
			t.Errorf("the two in flight: %d, %d; want 200, 200", a, b)
		}
		// RPM is not counted by the concurrency limiter: more than 1 a minute pass.
		for i := range 3 {
			if rec := serve(h, body); rec.Code != 200 {
				t.Errorf("sequential request %d: %d, want 200", i+1, rec.Code)
			}
		}
	})
}
