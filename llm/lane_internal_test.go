package llm

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

func TestTokenLimited(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		want   bool
	}{
		{"tokens spent", map[string]string{"x-ratelimit-remaining-tokens": "0"}, "", true},
		{"tokens left but too few, body says tokens", map[string]string{"x-ratelimit-remaining-tokens": "1200"},
			`{"error":{"message":"Rate limit reached for m on tokens per 1s: Limit 20000, Used 18800, Requested 4000.","type":"tokens","code":"rate_limit_exceeded"}}`, true},
		{"tokens left, requests left, no words", map[string]string{"x-ratelimit-remaining-tokens": "1200", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, true},
		{"only the token window told, no words", map[string]string{"x-ratelimit-remaining-tokens": "300"}, `{}`, true},
		{"requests spent", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "5000"}, "", false},
		{"both spent: requests rule", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0"}, "", false},
		{"tokens left, body says requests", map[string]string{"x-ratelimit-remaining-tokens": "9000"},
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500, Requested 1."}}`, false},
		{"no headers, OpenAI TPM message", nil,
			`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29500, Requested 900."}}`, true},
		{"no headers, RPM message", nil,
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1."}}`, false},
		{"no headers, no words", nil, `{"error":{"message":"Too many requests"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := tokenLimited(h, []byte(tc.body)); got != tc.want {
				t.Errorf("tokenLimited = %v, want %v", got, tc.want)
			}
		})
	}
}

// windowHeader is what a server says of its token window.
func windowHeader(left int, reset string) http.Header {
	h := http.Header{}
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(left))
	h.Set("x-ratelimit-reset-tokens", reset)
	return h
}

// The figure a response gives was counted when the server took that
// request: what was sent after it is still to come off it.
func TestWindowCountsWhatWasSentSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		ctx := context.Background()
		var ps []*permit
		for range 3 {
			p, err := l.acquire(ctx, "m", 300)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		// The first answer says 1000 were left after it: the two sent
		// since leave 400.
		ps[0].done(windowHeader(1000, "1s"), nil)
		start := time.Now()
		p, err := l.acquire(ctx, "m", 500)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second-10*time.Millisecond {
			t.Errorf("a request of 500 went after %v with 400 left in the window, want it to wait for the reset", waited)
		}
		p.release()
		for _, p := range ps[1:] {
			p.release()
		}
	})
}

// A request that waits for the token rate is held to the window as it is
// when the wait ends, not as it was when the wait began.
func TestWindowCheckedAfterTheRateWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1000 tokens a second, the bucket starting empty.
		l := NewLimiterConfig(LimiterConfig{TPM: 60000, Adapt: true})
		ctx := context.Background()
		first, err := l.acquire(ctx, "m", 1)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := make(chan time.Duration)
		go func() {
			p, err := l.acquire(ctx, "m", 500) // half a second of the rate
			if err != nil {
				t.Error(err)
			}
			p.release()
			got <- time.Since(start)
		}()
		time.Sleep(100 * time.Millisecond)
		// Meanwhile an answer says the window is spent for 2s more.
		first.done(windowHeader(0, "2.1s"), nil)
		if waited := <-got; waited < 2*time.Second {
			t.Errorf("the request went after %v, inside a spent window that resets at 2s", waited)
		}
	})
}
