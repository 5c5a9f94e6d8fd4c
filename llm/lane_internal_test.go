package llm

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestTokenLimited(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		tokens int // the request's estimate
		want   bool
	}{
		{"tokens spent", map[string]string{"x-ratelimit-remaining-tokens": "0"}, "", 10, true},
		{"tokens left but too few, body says tokens", map[string]string{"x-ratelimit-remaining-tokens": "1200"},
			`{"error":{"message":"Rate limit reached for m on tokens per 1s: Limit 20000, Used 18800, Requested 4000.","type":"tokens","code":"rate_limit_exceeded"}}`, 4000, true},
		{"too few tokens left for it, no words", map[string]string{"x-ratelimit-remaining-tokens": "1200", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, 4000, true},
		{"enough tokens left for it, no words (Azure's request slices)", map[string]string{"x-ratelimit-remaining-tokens": "1014", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded the limit. Please retry after 1 second."}}`, 300, false},
		{"Azure call rate", map[string]string{"x-ratelimit-remaining-tokens": "1014", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"code":"RateLimitReached","message":"Your requests exceeded call rate limit of your current pricing tier."}}`, 3000, false},
		{"requests spent", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "5000"}, "", 10, false},
		{"both spent: requests rule", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0"}, "", 10, false},
		{"tokens left, body says requests", map[string]string{"x-ratelimit-remaining-tokens": "9000"},
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500, Requested 1."}}`, 10, false},
		{"no headers, OpenAI TPM message", nil,
			`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29500, Requested 900."}}`, 900, true},
		{"no headers, RPM message", nil,
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1."}}`, 10, false},
		{"no headers, no words", nil, `{"error":{"message":"Too many requests"}}`, 5000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			e := classify(429, h, []byte(tc.body), time.Now())
			e.settle(tc.tokens)
			if e.Kind != RateLimited || e.tokenLimit != tc.want {
				t.Errorf("classify: %v, token limit %v; want rate limited, token limit %v", e.Kind, e.tokenLimit, tc.want)
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

// sendN acquires n permits of tokens each, at once.
func sendN(t *testing.T, l *Limiter, n, tokens int) []*permit {
	t.Helper()
	var ps []*permit
	for range n {
		p, err := l.acquire(context.Background(), "m", tokens)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// waitFor reports how long acquiring a permit of tokens took.
func waitFor(t *testing.T, l *Limiter, tokens int) time.Duration {
	t.Helper()
	start := time.Now()
	p, err := l.acquire(context.Background(), "m", tokens)
	if err != nil {
		t.Fatal(err)
	}
	p.release()
	return time.Since(start)
}

// Requests sent together may reach the server in any order: answers that
// come back out of it are not counted twice.
func TestWindowAnswersOutOfOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		ps := sendN(t, l, 3, 300)
		// The server took them in reverse: 1700, 1400 and 1100 left.
		ps[0].done(windowHeader(1100, "1s"), nil)
		ps[1].done(windowHeader(1400, "1s"), nil)
		ps[2].done(windowHeader(1700, "1s"), nil)
		if waited := waitFor(t, l, 1000); waited > 0 {
			t.Errorf("a request of 1000 waited %v with 1100 left and nothing in flight", waited)
		}
	})
}

// When the server's window resets, the requests held for it go only as far
// as its limit allows, not all at once.
func TestWindowAfterResetHoldsTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		h := windowHeader(0, "1s")
		h.Set("x-ratelimit-limit-tokens", "1000")
		sendN(t, l, 1, 1000)[0].done(h, nil)
		start := time.Now()
		var went [5]time.Duration
		var wg sync.WaitGroup
		for i := range went {
			wg.Go(func() { went[i] = waitFor(t, l, 300) })
		}
		wg.Wait()
		early := 0
		for _, d := range went {
			if d < time.Second {
				t.Errorf("a request went after %v, before the reset", d)
			}
			if d < 2*time.Second {
				early++
			}
		}
		if early != 3 {
			t.Errorf("%d requests of 300 went in the window after the reset (started %v ago), want 3 of a limit of 1000", early, time.Since(start))
		}
	})
}

// The figure a response gives was counted when the server took that
// request: what is still in flight may come off it yet.
func TestWindowCountsWhatIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		ps := sendN(t, l, 3, 300)
		// The first answer says 1000 were left after it: the two still in
		// flight may leave 400.
		ps[0].done(windowHeader(1000, "1s"), nil)
		if waited := waitFor(t, l, 500); waited < time.Second-10*time.Millisecond {
			t.Errorf("a request of 500 went after %v with 400 left in the window, want it to wait for the reset", waited)
		}
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

// A request bigger than the server's whole window is not held for ever: it
// goes into a window that nothing else has used, as servers admit it.
func TestWindowAdmitsAnOversizedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		h := windowHeader(200, "1s")
		h.Set("x-ratelimit-limit-tokens", "1000")
		sendN(t, l, 1, 800)[0].done(h, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		p, err := l.acquire(ctx, "m", 1500)
		if err != nil {
			t.Fatalf("a request of 1500 against a window of 1000: %v after %v", err, time.Since(start))
		}
		p.release()
		if waited := time.Since(start); waited < time.Second || waited > 2*time.Second {
			t.Errorf("a request of 1500 went after %v, want at the reset 1s away", waited)
		}
	})
}

// The server counts its reset from when a request reached it: the client
// allows a little for the way there rather than arrive a moment early.
func TestWindowResetAllowsForTheWayThere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		sendN(t, l, 1, 100)[0].done(windowHeader(0, "1s"), nil)
		if waited := waitFor(t, l, 100); waited < time.Second+10*time.Millisecond || waited > time.Second+50*time.Millisecond {
			t.Errorf("a request waited %v for a window that resets in 1s, want a little more", waited)
		}
	})
}

// A token 429 from a server that says nothing of its window, before any
// token rate is known, holds every request until its hint: what they would
// find is the same spent window. Once a rate is set, it holds only its own.
func TestFirstTokenLimitHoldsTheLane(t *testing.T) {
	for _, tc := range []struct {
		name string
		tpm  int
		want time.Duration
	}{
		{"no rate known", 0, time.Second},
		{"rate given", 6000000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := NewLimiterConfig(LimiterConfig{TPM: tc.tpm, Adapt: true})
				l.lane("m")
				time.Sleep(time.Second) // a full bucket, when there is one
				p := sendN(t, l, 1, 100)[0]
				body := []byte(`{"error":{"message":"Rate limit reached on tokens per min (TPM)","code":"rate_limit_exceeded"}}`)
				ae := classify(429, http.Header{"Retry-After": {"1"}}, body, time.Now())
				ae.header = http.Header{"Retry-After": {"1"}}
				if !ae.tokenLimit {
					t.Fatalf("classify: not a token limit: %+v", ae)
				}
				p.done(ae.header, ae)
				if waited := waitFor(t, l, 10); waited != tc.want {
					t.Errorf("the next request waited %v, want %v", waited, tc.want)
				}
			})
		})
	}
}

func limitHeader(what string, left int, reset string, limit int) http.Header {
	h := http.Header{}
	h.Set("x-ratelimit-remaining-"+what, strconv.Itoa(left))
	h.Set("x-ratelimit-reset-"+what, reset)
	h.Set("x-ratelimit-limit-"+what, strconv.Itoa(limit))
	return h
}

// Requests held for a window's reset take their rate after it: they leave
// spread out, not all at once.
func TestRatesSpreadAfterAWindowWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{RPM: 600, Adapt: true}) // 10 a second
		sendN(t, l, 1, 0)[0].done(limitHeader("requests", 0, "5s", 100), nil)
		var went [20]time.Duration
		var wg sync.WaitGroup
		for i := range went {
			wg.Go(func() { went[i] = waitFor(t, l, 0) })
		}
		wg.Wait()
		first, last := slices.Min(went[:]), slices.Max(went[:])
		if first < 5*time.Second || last-first < 1800*time.Millisecond {
			t.Errorf("20 requests at 10 a second went between %v and %v, want from 5s on over about 2s", first, last)
		}
	})
}

// A waiter for a reset is woken by an answer that tells of room sooner.
func TestWindowWaitWakesOnBetterNews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		sendN(t, l, 1, 100)[0].done(limitHeader("tokens", 0, "30s", 1000), nil)
		time.Sleep(31 * time.Second) // the window resets; the next is guessed to last 30s
		ps := sendN(t, l, 10, 100)   // and is spent
		got := make(chan time.Duration)
		go func() { got <- waitFor(t, l, 100) }()
		time.Sleep(time.Second)
		for _, p := range ps[1:] {
			p.done(nil, nil)
		}
		// The server's window was shorter than the guess, and has room.
		ps[0].done(limitHeader("tokens", 500, "1500ms", 1000), nil)
		if waited := <-got; waited > 1100*time.Millisecond {
			t.Errorf("the waiter went after %v, want at once when the answer told of room", waited)
		}
	})
}

// An answer to a request sent before a reset speaks of the window before:
// it does not start the window after it over.
func TestWindowIgnoresLateAnswersFromTheWindowBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		sendN(t, l, 1, 100)[0].done(limitHeader("tokens", 400, "1s", 1000), nil)
		time.Sleep(500 * time.Millisecond)
		old := sendN(t, l, 1, 100)[0] // into the first window
		time.Sleep(550 * time.Millisecond)
		sendN(t, l, 10, 100) // the second window, guessed, is spent
		old.done(limitHeader("tokens", 300, "600ms", 1000), nil)
		start := time.Now()
		if waited := waitFor(t, l, 100); start.Add(waited).Sub(start) < 900*time.Millisecond {
			t.Errorf("a request went %v into a spent window", waited)
		}
	})
}

// What is in flight from the window before was counted there, not in this
// one.
func TestWindowCountsOnlyItsOwnRequestsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		sendN(t, l, 5, 100) // long answers, still in flight
		time.Sleep(1500 * time.Millisecond)
		sendN(t, l, 1, 100)[0].done(limitHeader("tokens", 800, "1s", 1000), nil)
		if waited := waitFor(t, l, 700); waited > 0 {
			t.Errorf("a request of 700 waited %v with 800 left in the window", waited)
		}
	})
}

// A request counted in a window stays counted while it waits for its token
// rate, whatever answers come meanwhile.
func TestWindowKeepsWhatWaitsForARate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{TPM: 60000, Adapt: true}) // 1000 a second
		first := sendN(t, l, 1, 1)[0]
		var went [4]time.Duration
		var wg sync.WaitGroup
		for i := range went {
			wg.Go(func() { went[i] = waitFor(t, l, 500) })
		}
		time.Sleep(100 * time.Millisecond)
		first.done(limitHeader("requests", 2, "5s", 10), nil)
		wg.Wait()
		early := 0
		for _, d := range went {
			if d < 5*time.Second {
				early++
			}
		}
		if early != 2 {
			t.Errorf("%d requests went before the reset with 2 left in the window, want 2", early)
		}
	})
}

// Room promised to a request that then does not go is free again at once
// for the others waiting, not only at the window's reset.
func TestWindowRoomGivenBackWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{TPM: 60000, Adapt: true}) // 1000 a second
		ps := sendN(t, l, 2, 1)
		ps[0].done(limitHeader("tokens", 999, "60s", 2000), nil)
		a, w := make(chan time.Duration), make(chan time.Duration)
		go func() { a <- waitFor(t, l, 800) }() // promised 800, waits for its rate
		time.Sleep(10 * time.Millisecond)
		go func() { w <- waitFor(t, l, 500) }() // 999 - 800 is too little
		time.Sleep(100 * time.Millisecond)
		ps[1].done(limitHeader("tokens", 600, "60s", 2000), nil) // now 800 does not fit, 500 does
		if waited := <-w; waited > 5*time.Second {
			t.Errorf("a request of 500 with 600 left went after %v, at the reset", waited)
		}
		<-a
	})
}

// After a quiet spell, the window guessed to follow keeps to the server's
// grid of windows: it ends a whole number of periods after the last reset
// known, not a period after the first request.
func TestWindowGuessKeepsToTheGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		sendN(t, l, 1, 100)[0].done(limitHeader("tokens", 500, "1s", 1000), nil) // resets at 1s (+ guard)
		time.Sleep(3500 * time.Millisecond)
		sendN(t, l, 1, 1000) // spends the window from 3s to 4s
		if waited := waitFor(t, l, 100); waited > 600*time.Millisecond {
			t.Errorf("the next request waited %v, want it in the window from 4s", waited)
		}
	})
}

// A short request is not held behind a long one that does not fit what is
// left of the window: it goes at once, and the long one at the reset.
func TestWindowShortPassesLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiterConfig(LimiterConfig{Adapt: true})
		sendN(t, l, 1, 100)[0].done(limitHeader("tokens", 500, "1s", 5000), nil)
		long := make(chan time.Duration)
		go func() { long <- waitFor(t, l, 2000) }()
		time.Sleep(10 * time.Millisecond)
		if waited := waitFor(t, l, 100); waited > 0 {
			t.Errorf("a short request waited %v behind a long one", waited)
		}
		if waited := <-long; waited < 990*time.Millisecond {
			t.Errorf("the long request went after %v, before the reset", waited)
		}
	})
}
