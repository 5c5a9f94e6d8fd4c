package llm_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// randomRefusals answers at once, in 20ms; one request in ten, drawn from
// rng, gets a 429. With claim, its headers claim the token window is spent
// for 6 minutes (or reset), with Retry-After: 1; without, it says only
// `retry-after-ms: 5`: a gateway shedding load it does not have.
type randomRefusals struct {
	claim   bool
	reset   string // the claim's reset; "": 6m0s
	seconds bool   // the hint is Retry-After: 1, not retry-after-ms: 5
	mu      sync.Mutex
	rng     *rand.Rand
}

func (s *randomRefusals) Do(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	refuse := s.rng.IntN(10) == 0
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	h := http.Header{}
	if s.claim {
		h.Set("x-ratelimit-limit-tokens", "1000000")
		h.Set("x-ratelimit-reset-tokens", cmp.Or(s.reset, "6m0s"))
		h.Set("x-ratelimit-remaining-tokens", "999000")
	}
	if !refuse {
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(
			`{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))}, nil
	}
	body := `{"error":{"message":"Rate limit reached for requests.","type":"requests","code":"rate_limit_exceeded"}}`
	if s.claim {
		h.Set("x-ratelimit-remaining-tokens", "0")
		h.Set("Retry-After", "1")
		body = `{"error":{"message":"Rate limit reached on tokens per min (TPM)","code":"rate_limit_exceeded"}}`
	} else if s.seconds {
		h.Set("Retry-After", "1")
	} else {
		h.Set("retry-after-ms", "5")
	}
	return &http.Response{StatusCode: 429, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// tinyRun sends n tiny items through c with 32 workers and returns how
// long it took and how many items failed, each failure reported.
func tinyRun(t *testing.T, c *llm.Client, n int) (took time.Duration, failed int) {
	var next, bad atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"item %d"}]}`, i)
				if _, _, err := c.Do(context.Background(), &llm.Request{Model: "m", Body: []byte(body), Tokens: 10}); err != nil {
					t.Errorf("item %d: %v", i, err)
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), int(bad.Load())
}

// TestFalseSpentClaimCostsItsRetryAfter: a claim that the token window is
// spent for 6 minutes, which the client's own count contradicts (it sent a
// fraction of the stated limit), costs the refused request its Retry-After
// and no more: the run does not wait for the claimed reset, and its pace
// is not cut.
func TestFalseSpentClaimCostsItsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true, Concurrency: 32, Margin: 0.03})
		c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: &randomRefusals{claim: true, rng: rand.New(rand.NewPCG(1, 2))},
			Limiter: lim, MaxAttempts: 6})
		if err != nil {
			t.Fatal(err)
		}
		took, _ := tinyRun(t, c, 600)
		// Unhindered: 600 answers of 20ms over 32 workers, about 0.4s, and
		// a refused request's second of waiting (or a few, in a row).
		if took > 5*time.Second {
			t.Errorf("600 tiny requests against false 6-minute claims took %v, want a few seconds", took)
		}
		if _, tpm := lim.Effective("m"); tpm != 0 {
			t.Errorf("the token pace after false claims is %v a minute, want none learned", tpm)
		}
	})
}

// TestFalseShortClaimCostsItsRetryAfter: the same false claims, the
// window said to reset in a second, within the hint: the claim is still
// not believed where the lane's count over all it remembers contradicts
// it too, and the refusals cost their Retry-After, not the pace. (Taken
// for plain 429s, they paused the lane and cut the pace: 5 to 8 minutes.)
func TestFalseShortClaimCostsItsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true, Concurrency: 32, Margin: 0.03})
		c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: &randomRefusals{claim: true, reset: "1s", rng: rand.New(rand.NewPCG(1, 2))},
			Limiter: lim, MaxAttempts: 6})
		if err != nil {
			t.Fatal(err)
		}
		if took, _ := tinyRun(t, c, 600); took > 10*time.Second {
			t.Errorf("600 tiny requests against false claims resetting in a second took %v, want a few seconds", took)
		}
	})
}

// TestFlakyGateway: random 429s cost no item, however many there are, and
// little time: refusals that come whatever the pace are told from a limit
// by the shares refused at the rates tried, and the cuts they made are
// undone. The fake time the run takes is logged (go test ./llm -run
// TestFlakyGateway -count=100 -v: 1.7 to 2.9 s; see bench/README.md,
// "Known limits").
func TestFlakyGateway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true, Margin: 0.03, Concurrency: 32})
		c, err := llm.New(llm.Config{BaseURL: "http://gw/v1", HTTPClient: &randomRefusals{rng: rand.New(rand.NewPCG(7, 7))}, Limiter: lim,
			MaxAttempts: 6, Backoff: llm.FullJitter(time.Second, time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		const items = 600
		took, failed := tinyRun(t, c, items)
		t.Logf("%d items through a gateway refusing one attempt in ten at random: %v (with no refusals: %v)",
			items, took.Round(time.Millisecond), time.Duration(items/32+1)*20*time.Millisecond)
		if failed > 0 {
			t.Errorf("%d items failed, want none: a random 429 is not a verdict on an item", failed)
		}
		// Unhindered, 0.4 s; cut for each refusal as if for a limit, it
		// took minutes (2m19s to 28m45s).
		if took > 10*time.Second {
			t.Errorf("600 tiny requests through a gateway refusing one in ten at random took %v, want a few seconds", took)
		}
	})
}

// TestFlakyGatewayWholeSeconds: the same gateway, its hint Retry-After: 1.
// Each refused request waits its second, never less, and no item fails;
// the fake time is logged (go test ./llm -run TestFlakyGatewayWholeSeconds
// -v): refusals known to be noise pause no one, and once a pace has held
// a one-second hint pauses the others only for the estimator's hold, but
// with a refusal every few requests a pace rarely holds, and the noise is
// learned slowly: 2.5 to 9.5 min by seed and goroutine order.
func TestFlakyGatewayWholeSeconds(t *testing.T) {
	for _, seed := range []uint64{7, 3, 11} {
		synctest.Test(t, func(t *testing.T) {
			lim := llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true, Margin: 0.03, Concurrency: 32})
			c, err := llm.New(llm.Config{BaseURL: "http://gw/v1", HTTPClient: &randomRefusals{seconds: true, rng: rand.New(rand.NewPCG(seed, 7))},
				Limiter: lim, MaxAttempts: 6, Backoff: llm.FullJitter(time.Second, time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			took, failed := tinyRun(t, c, 600)
			t.Logf("seed %d: 600 items, one attempt in ten refused with Retry-After: 1, in %v", seed, took.Round(time.Millisecond))
			if failed > 0 {
				t.Errorf("%d items failed, want none", failed)
			}
		})
	}
}

// busyForOne refuses every attempt of one request (429 with a short
// Retry-After) for its first refusals, while it admits all the others.
type busyForOne struct {
	mu       sync.Mutex
	refusals int // left to give the "slow" request
}

func (s *busyForOne) Do(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	time.Sleep(10 * time.Millisecond)
	s.mu.Lock()
	refuse := strings.Contains(string(b), "slow") && s.refusals > 0
	if refuse {
		s.refusals--
	}
	s.mu.Unlock()
	if refuse {
		return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"1"}}, Body: io.NopCloser(strings.NewReader(
			`{"error":{"message":"Rate limit reached for requests","code":"rate_limit_exceeded"}}`))}, nil
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(
		`{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))}, nil
}

// TestRateLimitDoesNotUseUpAttempts: a request refused with 429 ten times
// in a row, with MaxAttempts 3, still succeeds while the server admits
// other requests; alone, with nothing else getting through for a minute,
// its 429s count.
func TestRateLimitDoesNotUseUpAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &busyForOne{refusals: 10}
		c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: srv, MaxAttempts: 3,
			Limiter: llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true})})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { // the others, getting through meanwhile
			for i := 0; ctx.Err() == nil; i++ {
				c.Do(ctx, &llm.Request{Model: "m", Body: fmt.Appendf(nil, `{"n":%d}`, i)})
			}
		})
		_, n, err := c.Do(context.Background(), &llm.Request{Model: "m", Body: []byte(`{"slow":1}`)})
		cancel()
		wg.Wait()
		if err != nil || n != 11 {
			t.Errorf("Do() refused 10 times while others got through = %d attempts, %v; want 11, nil", n, err)
		}

		time.Sleep(2 * time.Minute) // nothing gets through any more
		srv.refusals = 10
		_, n, err = c.Do(context.Background(), &llm.Request{Model: "m", Body: []byte(`{"slow":2}`)})
		var ae *llm.APIError
		if n != 3 || !errors.As(err, &ae) || ae.Kind != llm.RateLimited {
			t.Errorf("Do() refused alone = %d attempts, %v; want 3 and the 429", n, err)
		}
	})
}
