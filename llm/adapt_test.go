package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// handlerClient serves requests with an http.Handler in memory, so a whole
// run can play under synctest's fake clock.
type handlerClient struct {
	h         http.Handler
	noHeaders bool // strip x-ratelimit-* and retry-after-ms: a server that says little
}

func (c handlerClient) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	res := rec.Result()
	if c.noHeaders {
		for k := range res.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-ratelimit") || strings.EqualFold(k, "retry-after-ms") {
				res.Header.Del(k)
			}
		}
	}
	return res, nil
}

type scenario struct {
	name        string
	serverRPM   int // per second-long window, scaled: 20 means 20 requests/s
	clientRPM   int // --rpm, per minute; 0: unset
	workers     int
	n           int
	noHeaders   bool
	max429      float64   // fraction of requests, a loose bound to catch a regression
	maxSlowdown float64   // of the ideal time n/limit
	log         io.Writer // where the limiter logs; nil: nowhere
}

// runScenario pushes n requests through a client with an adaptive limiter
// against the mock limiting serverRPM requests per one-second window, and
// returns the fake time taken and the 429s the server sent.
func runScenario(t *testing.T, sc scenario) (time.Duration, int64) {
	var took time.Duration
	var limited int64
	synctest.Test(t, func(t *testing.T) {
		h := mock.New(mock.Config{RPM: sc.serverRPM, Window: time.Second, Latency: 20 * time.Millisecond})
		// The client's rpm is per minute; the scaled server counts per second.
		var logger *slog.Logger
		if sc.log != nil {
			logger = slog.New(slog.NewTextHandler(sc.log, nil))
		}
		lim := llm.NewLimiterConfig(llm.LimiterConfig{RPM: sc.clientRPM * 60, Adapt: true, Margin: 0.03, Concurrency: sc.workers, Logger: logger})
		c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: handlerClient{h, sc.noHeaders},
			Limiter: lim, MaxAttempts: 50, Backoff: llm.FullJitter(100*time.Millisecond, 2*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range sc.workers {
			wg.Go(func() {
				for i := next.Add(1); i <= int64(sc.n); i = next.Add(1) {
					body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"item %d"}]}`, i)
					if _, _, err := c.Do(context.Background(), &llm.Request{Model: "m", Body: []byte(body), Tokens: 10}); err != nil {
						t.Errorf("request %d: %v", i, err)
					}
				}
			})
		}
		wg.Wait()
		took = time.Since(start)
		limited = h.Stats().RateLimited
	})
	return took, limited
}

// TestAdaptiveFindsTheLimit checks that, told a wrong limit or none, the
// limiter settles near the server's real one with few 429s. The bounds are
// loose; bench/ measures the figures.
func TestAdaptiveFindsTheLimit(t *testing.T) {
	for _, sc := range []scenario{
		{name: "no rpm, headers", serverRPM: 20, workers: 32, n: benchN(600), max429: 0.05, maxSlowdown: 1.3},
		{name: "no rpm, no headers", serverRPM: 20, workers: 32, n: benchN(600), noHeaders: true, max429: 0.08, maxSlowdown: 1.3},
		{name: "rpm 5x too high, headers", serverRPM: 20, clientRPM: 100, workers: 32, n: benchN(600), max429: 0.05, maxSlowdown: 1.2},
		{name: "rpm right, headers", serverRPM: 20, clientRPM: 20, workers: 32, n: benchN(600), max429: 0.01, maxSlowdown: 1.1},
		{name: "rpm 5x too high, no headers", serverRPM: 20, clientRPM: 100, workers: 32, n: benchN(600), noHeaders: true, max429: 0.08, maxSlowdown: 1.5},
		{name: "rpm right, no headers", serverRPM: 20, clientRPM: 20, workers: 32, n: benchN(600), noHeaders: true, max429: 0.01, maxSlowdown: 1.1},
	} {
		t.Run(sc.name, func(t *testing.T) {
			took, limited := runScenario(t, sc)
			ideal := time.Duration(float64(sc.n) / float64(sc.serverRPM) * float64(time.Second))
			share := float64(limited) / float64(int64(sc.n)+limited)
			t.Logf("%s: %v (%.2fx ideal %v), %d 429s (%.1f%%)", sc.name, took.Round(time.Millisecond),
				took.Seconds()/ideal.Seconds(), ideal, limited, 100*share)
			if share > sc.max429 {
				t.Errorf("%.1f%% of requests got 429, want at most %.1f%%", 100*share, 100*sc.max429)
			}
			if took.Seconds() > sc.maxSlowdown*ideal.Seconds() {
				t.Errorf("took %v, want at most %.2fx the ideal %v", took, sc.maxSlowdown, ideal)
			}
		})
	}
}

// TestStorm: 32 workers against a server allowing 10 requests a second and
// answering 429 with Retry-After beyond that. Every item completes, and once
// the first 429 is in, no second of the server's sees more arrivals than
// its limit (429s included): the workers do not storm. With the server's
// headers, no second at all does.
func TestStorm(t *testing.T) {
	for _, noHeaders := range []bool{false, true} {
		t.Run(fmt.Sprintf("noHeaders=%v", noHeaders), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				m := mock.New(mock.Config{RPM: 10, Window: time.Second, Latency: 30 * time.Millisecond})
				var mu sync.Mutex
				arrivals := map[int]int{} // by second of the server's windows
				first429 := -1
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sec := int(time.Since(start) / time.Second)
					rec := httptest.NewRecorder()
					m.ServeHTTP(rec, r)
					mu.Lock()
					arrivals[sec]++
					if rec.Code == 429 && first429 < 0 {
						first429 = sec
					}
					mu.Unlock()
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					w.WriteHeader(rec.Code)
					w.Write(rec.Body.Bytes())
				})
				lim := llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true, Concurrency: 32})
				c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: handlerClient{h, noHeaders},
					Limiter: lim, MaxAttempts: 20, Backoff: llm.FullJitter(100*time.Millisecond, 2*time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				const n = 200
				var next, done atomic.Int64
				var wg sync.WaitGroup
				for range 32 {
					wg.Go(func() {
						for i := next.Add(1); i <= n; i = next.Add(1) {
							body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"s%d"}]}`, i)
							if _, _, err := c.Do(context.Background(), &llm.Request{Model: "m", Body: []byte(body)}); err != nil {
								t.Errorf("request %d: %v", i, err)
								continue
							}
							done.Add(1)
						}
					})
				}
				wg.Wait()
				if done.Load() != n {
					t.Errorf("%d of %d requests completed", done.Load(), n)
				}
				if first429 < 0 && noHeaders {
					t.Fatal("the server never answered 429: the test tests nothing")
				}
				// With its headers the server is never pushed: first429 is
				// -1, and no second may see a burst.
				for sec, k := range arrivals {
					// The second of the first 429 is the storm being
					// discovered; the next may still hold retries of it.
					// Later, probing for a higher limit may send one
					// request over it, never a burst.
					if sec > first429+1 && k > 11 {
						t.Errorf("second %d saw %d requests, a burst over the server's limit of 10 (first 429 in second %d)", sec, k, first429)
					}
				}
			})
		})
	}
}

// TestCircuitBreaker: when every attempt has failed for BreakAfter (and at
// least a handful of times), requests stop with Unavailable, which stops the
// run; a success resets it.
func TestCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail.Load() {
				w.WriteHeader(503)
				return
			}
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		})
		c, err := llm.New(llm.Config{BaseURL: "http://x/v1", HTTPClient: handlerClient{h: h}, BreakAfter: time.Minute,
			MaxAttempts: 1000, Backoff: func(int) time.Duration { return 5 * time.Second }})
		if err != nil {
			t.Fatal(err)
		}
		req := &llm.Request{Body: []byte(`{"model":"m","messages":[]}`)}
		start := time.Now()
		_, n, err := c.Do(context.Background(), req)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Kind != llm.Unavailable || !ae.Kind.StopsRun() {
			t.Fatalf("Do against a dead server = %v, want Unavailable", err)
		}
		if took := time.Since(start); took < time.Minute || n < 5 {
			t.Errorf("gave up after %v and %d attempts, want at least a minute and 5", took, n)
		}
		fail.Store(false)
		// Still broken: nothing succeeded since. A new client starts fresh.
		c2, _ := llm.New(llm.Config{BaseURL: "http://x/v1", HTTPClient: handlerClient{h: h}, BreakAfter: time.Minute})
		if _, _, err := c2.Do(context.Background(), req); err != nil {
			t.Errorf("Do after the server came back = %v", err)
		}
	})
}

// TestCircuitBreakerSlowFailures: two failures minutes apart (a slow request
// timing out) do not stop the run.
func TestCircuitBreakerSlowFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			if calls <= 2 {
				time.Sleep(3 * time.Minute)
				w.WriteHeader(504)
				return
			}
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		})
		c, _ := llm.New(llm.Config{BaseURL: "http://x/v1", HTTPClient: handlerClient{h: h}, BreakAfter: 2 * time.Minute,
			Timeout: time.Hour, Backoff: func(int) time.Duration { return 0 }})
		if _, n, err := c.Do(context.Background(), &llm.Request{Body: []byte(`{}`)}); err != nil || n != 3 {
			t.Errorf("Do = %d attempts, %v; want success on the third", n, err)
		}
	})
}

// TestLimitChangesAreLogged: the effective limit's changes reach the log at
// info level, down after a 429 and up as requests succeed.
func TestLimitChangesAreLogged(t *testing.T) {
	var buf syncBuffer
	runScenario(t, scenario{name: "log", serverRPM: 20, workers: 32, n: 1200, noHeaders: true, log: &buf})
	out := buf.String()
	for _, want := range []string{"limit lowered after a 429", "limit raised while requests succeed"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
