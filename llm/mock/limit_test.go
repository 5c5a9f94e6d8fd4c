package mock

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// serve calls h.ServeHTTP directly, with no socket, so it may run inside a
// synctest bubble.
func serve(h *Handler, body string) *httptest.ResponseRecorder {
	return serveCtx(context.Background(), h, body)
}

func serveCtx(ctx context.Context, h *Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/chat/completions", strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func headerInt(t *testing.T, rec *httptest.ResponseRecorder, name string) int {
	t.Helper()
	n, err := strconv.Atoi(rec.Header().Get(name))
	if err != nil {
		t.Fatalf("header %s = %q, want an integer", name, rec.Header().Get(name))
	}
	return n
}

func TestRequestLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{RPM: 5, Window: time.Second})
		body := chatBody(t, "x", nil)
		time.Sleep(200 * time.Millisecond) // 800ms left in window 0
		for i := range 5 {
			rec := serve(h, body)
			if rec.Code != 200 {
				t.Fatalf("request %d: status = %d, want 200", i+1, rec.Code)
			}
			if got := headerInt(t, rec, "x-ratelimit-remaining-requests"); got != 4-i {
				t.Errorf("request %d: x-ratelimit-remaining-requests = %d, want %d", i+1, got, 4-i)
			}
			if got := rec.Header().Get("x-ratelimit-reset-requests"); got != "800ms" {
				t.Errorf("request %d: x-ratelimit-reset-requests = %q, want 800ms", i+1, got)
			}
		}
		for range 2 { // refusals do not count, so the answer stays the same
			rec := serve(h, body)
			if rec.Code != 429 {
				t.Fatalf("6th request: status = %d, want 429", rec.Code)
			}
			if got := rec.Header().Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After = %q, want 1", got)
			}
			if got := headerInt(t, rec, "retry-after-ms"); got != 800 {
				t.Errorf("retry-after-ms = %d, want 800", got)
			}
			if got := rec.Header().Get("x-ratelimit-limit-requests"); got != "5" {
				t.Errorf("x-ratelimit-limit-requests = %q, want 5", got)
			}
			e := decodeError(t, reply{rec.Code, rec.Header(), rec.Body.Bytes()})
			if code(e) != "rate_limit_exceeded" || e.Error.Type != "requests" || !strings.HasPrefix(e.Error.Message, "Rate limit reached") {
				t.Errorf("error = %+v, want a requests rate_limit_exceeded", e.Error)
			}
		}

		time.Sleep(799 * time.Millisecond) // 1ms before the window ends
		rec := serve(h, body)
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || rec.Header().Get("retry-after-ms") != "1" {
			t.Errorf("1ms before the end: %d, Retry-After %q, retry-after-ms %q; want 429, 1, 1",
				rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("retry-after-ms"))
		}
		time.Sleep(time.Millisecond) // window 1 begins
		for i := range 6 {
			want := 200
			if i == 5 {
				want = 429
			}
			if rec := serve(h, body); rec.Code != want {
				t.Errorf("window 1, request %d: status = %d, want %d", i+1, rec.Code, want)
			}
		}
		if s := h.Stats(); s.OK != 10 || s.RateLimited != 4 {
			t.Errorf("Stats() = %+v, want 10 OK, 4 rate limited", s)
		}
	})
}

func TestTokenLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{TPM: 100, Window: 10 * time.Second})
		// 40 chars = 10 prompt tokens, plus max_tokens 20: 30 tokens each.
		body := chatBody(t, strings.Repeat("y", 40), map[string]any{"max_tokens": 20})
		for i := range 3 {
			rec := serve(h, body)
			if rec.Code != 200 {
				t.Fatalf("request %d: status = %d, want 200", i+1, rec.Code)
			}
			if got := headerInt(t, rec, "x-ratelimit-remaining-tokens"); got != 70-30*i {
				t.Errorf("request %d: x-ratelimit-remaining-tokens = %d, want %d", i+1, got, 70-30*i)
			}
		}
		rec := serve(h, body) // 120 > 100
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "10" {
			t.Fatalf("4th request: %d, Retry-After %q; want 429, 10", rec.Code, rec.Header().Get("Retry-After"))
		}
		if e := decodeError(t, reply{rec.Code, rec.Header(), rec.Body.Bytes()}); e.Error.Type != "tokens" {
			t.Errorf("error type = %q, want tokens", e.Error.Type)
		}
		if rec := serve(h, chatBody(t, "small", nil)); rec.Code != 200 { // 1 token still fits
			t.Errorf("small request: status = %d, want 200", rec.Code)
		}

		time.Sleep(10 * time.Second)
		huge := chatBody(t, strings.Repeat("z", 1000), nil) // 250 tokens, more than TPM
		if rec := serve(h, huge); rec.Code != 200 {
			t.Errorf("oversized request into an empty window: status = %d, want 200", rec.Code)
		}
		if rec := serve(h, body); rec.Code != 429 {
			t.Errorf("after the oversized request: status = %d, want 429", rec.Code)
		}
	})
}

// A server that says little: no x-ratelimit-* headers, and a 429 with
// Retry-After in whole seconds only.
func TestNoLimitHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{RPM: 1, TPM: 1000, Window: time.Second, NoLimitHeaders: true})
		body := chatBody(t, "x", nil)
		for i, want := range []int{200, 429} {
			rec := serve(h, body)
			if rec.Code != want {
				t.Fatalf("request %d: status = %d, want %d", i+1, rec.Code, want)
			}
			for k := range rec.Header() {
				if strings.HasPrefix(strings.ToLower(k), "x-ratelimit") || strings.EqualFold(k, "retry-after-ms") {
					t.Errorf("request %d: header %s sent", i+1, k)
				}
			}
			if want == 429 && rec.Header().Get("Retry-After") != "1" {
				t.Errorf("429: Retry-After = %q, want 1", rec.Header().Get("Retry-After"))
			}
		}
	})
}

// With Bucket, the limits refill continuously: a spent bucket lets a
// request through as soon as it has refilled enough for it, and the headers
// say when it will be full.
func TestBucketLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{TPM: 1000, Window: 10 * time.Second, Bucket: true}) // 100 tokens a second
		big := chatBody(t, strings.Repeat("y", 3200), nil)                  // 800 tokens
		rec := serve(h, big)
		if rec.Code != 200 || headerInt(t, rec, "x-ratelimit-remaining-tokens") != 200 {
			t.Fatalf("first request: %d, remaining %s; want 200, 200", rec.Code, rec.Header().Get("x-ratelimit-remaining-tokens"))
		}
		if got := rec.Header().Get("x-ratelimit-reset-tokens"); got != "8s" {
			t.Errorf("x-ratelimit-reset-tokens = %q, want 8s (800 tokens to refill at 100 a second)", got)
		}
		rec = serve(h, big)
		if rec.Code != 429 || headerInt(t, rec, "retry-after-ms") != 6000 {
			t.Fatalf("second request: %d, retry-after-ms %s; want 429, 6000", rec.Code, rec.Header().Get("retry-after-ms"))
		}
		time.Sleep(6 * time.Second)
		if rec := serve(h, big); rec.Code != 200 {
			t.Errorf("after 6s: status %d, want 200", rec.Code)
		}
		time.Sleep(time.Minute)
		huge := chatBody(t, strings.Repeat("z", 8000), nil) // 2000 tokens, more than the bucket
		if rec := serve(h, huge); rec.Code != 200 {
			t.Errorf("an oversized request from a full bucket: status %d, want 200", rec.Code)
		}
	})
}

func TestLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 1})
		body := chatBody(t, "x", nil)
		var spread time.Duration
		for range 20 {
			start := time.Now()
			if rec := serve(h, body); rec.Code != 200 {
				t.Fatalf("status = %d, want 200", rec.Code)
			}
			d := time.Since(start)
			if d < 20*time.Millisecond || d > 25*time.Millisecond {
				t.Errorf("answer took %v, want 20ms..25ms", d)
			}
			spread = max(spread, d-20*time.Millisecond)
		}
		if spread == 0 {
			t.Errorf("20 answers with Jitter 5ms all took exactly the latency")
		}
	})
}

func TestLatencyCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{Latency: time.Hour, Quota: 1})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		rec := serveCtx(ctx, h, chatBody(t, "x", nil))
		if d := time.Since(start); d != time.Second || rec.Code != statusClientClosed {
			t.Errorf("cancelled after 1s: took %v, status %d; want 1s, %d", d, rec.Code, statusClientClosed)
		}
		// The cancelled request gave its quota grant back.
		if rec := serve(h, chatBody(t, "x", nil)); rec.Code != 200 {
			t.Errorf("next request: status = %d, want 200", rec.Code)
		}
	})
}

func TestFormatReset(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{1200 * time.Millisecond, "1.2s"},
		{345 * time.Millisecond, "345ms"},
		{344*time.Millisecond + 1, "345ms"},
		{time.Minute, "1m0s"},
		{0, "0s"},
	}
	for _, tt := range tests {
		if got := formatReset(tt.d); got != tt.want {
			t.Errorf("formatReset(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestRetryHeaders(t *testing.T) {
	tests := []struct {
		d       time.Duration
		seconds string
		ms      string
	}{
		{800 * time.Millisecond, "1", "800"},
		{time.Microsecond, "1", "1"},
		{1001 * time.Millisecond, "2", "1001"},
		{59 * time.Second, "59", "59000"},
	}
	for _, tt := range tests {
		h := http.Header{}
		setRetryHeaders(h, tt.d, true)
		if h.Get("Retry-After") != tt.seconds || h.Get("Retry-After-Ms") != tt.ms {
			t.Errorf("setRetryHeaders(%v): Retry-After %q, retry-after-ms %q; want %q, %q",
				tt.d, h.Get("Retry-After"), h.Get("Retry-After-Ms"), tt.seconds, tt.ms)
		}
	}
}

// endless is an endless body of spaces.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestBodyTooLarge(t *testing.T) {
	h := New(Config{})
	req := httptest.NewRequest("POST", "/v1/chat/completions", endless{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("endless body: status = %d, want 413", rec.Code)
	}
	if e := decodeError(t, reply{rec.Code, rec.Header(), rec.Body.Bytes()}); code(e) != "request_too_large" {
		t.Errorf("code = %q, want request_too_large", code(e))
	}
}
