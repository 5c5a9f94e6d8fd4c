package llm_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// A request bigger than the server's whole token window, among small ones
// that keep coming, goes within a bounded time: the server admits it into
// an empty window, and once its patience (a window's period) is over the
// client keeps the next one for it. The bound: the rest of the window it
// came in, its patience, the window kept, and the answer's latency.
func TestOversizedRequestAmongSmallOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mock.New(mock.Config{TPM: 1000, Window: time.Second, Latency: 300 * time.Millisecond})
		c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: handlerClient{h, false},
			Limiter: llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true}), MaxAttempts: 20})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		do := func(chars int) error {
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}]}`, strings.Repeat("x", chars))
			_, _, err := c.Do(ctx, &llm.Request{Model: "m", Body: []byte(body), Tokens: chars / 4})
			return err
		}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for do(400) == nil { // 100 tokens each
				}
			})
		}
		time.Sleep(2500 * time.Millisecond)
		start := time.Now()
		if err := do(6000); err != nil { // 1500 tokens
			t.Errorf("the big request: %v", err)
		}
		if took := time.Since(start); took > 3500*time.Millisecond {
			t.Errorf("the big request took %v, want it within 3.5s (1s windows, 0.3s latency)", took)
		}
		cancel()
		wg.Wait()
	})
}

// hostileHeaders answers every request, now and then with a 429, with
// x-ratelimit-* headers drawn from odd values: negative, unparsable, zero
// limits, remaining above the limit, resets of nothing or in the past.
type hostileHeaders struct {
	mu  sync.Mutex
	n   int
	rng *rand.Rand
}

func (s *hostileHeaders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.n++
	pick := func(vs ...string) string { return vs[s.rng.IntN(len(vs))] }
	h := w.Header()
	for _, what := range []string{"requests", "tokens"} {
		if v := pick("", "0", "1", "-5", "abc", "3", "1000000", "99999999999"); v != "" {
			h.Set("x-ratelimit-remaining-"+what, v)
		}
		if v := pick("", "0s", "-1s", "abc", "1ms", "500ms", "2s", "1.5", "0", "1e-3"); v != "" {
			h.Set("x-ratelimit-reset-"+what, v)
		}
		if v := pick("", "0", "-1", "abc", "1", "2", "1000000"); v != "" {
			h.Set("x-ratelimit-limit-"+what, v)
		}
	}
	limited := s.rng.IntN(10) == 0
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	if limited {
		h.Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached on tokens per min (TPM)","code":"rate_limit_exceeded"}}`)
		return
	}
	io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
}

// Whatever a server says in its rate-limit headers, the run ends: odd
// figures are read as well as they can be and never hold requests for good.
// (The limits of one request or one token a window that these headers
// sometimes claim make it slow, and the odd 429 lowers the token rate to
// what got through: 20 minutes to 2.5 hours of fake time.)
func TestHostileLimitHeaders(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &hostileHeaders{rng: rand.New(rand.NewPCG(seed, 7))}
				c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: handlerClient{srv, false},
					Limiter: llm.NewLimiterConfig(llm.LimiterConfig{TPM: 600000, Adapt: true, Concurrency: 16}), MaxAttempts: 50})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Hour)
				defer cancel()
				start := time.Now()
				var wg sync.WaitGroup
				for i := range 16 {
					wg.Go(func() {
						for j := range 20 {
							body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"item %d-%d"}]}`, i, j)
							if _, _, err := c.Do(ctx, &llm.Request{Model: "m", Body: []byte(body), Tokens: 50 + 400*(j%3)}); err != nil {
								t.Errorf("request %d-%d: %v", i, j, err)
								return
							}
						}
					})
				}
				wg.Wait()
				// Every request has ended (an error above otherwise): none
				// was held for good. How long it took is only logged.
				t.Logf("320 requests in %v, %d answers", time.Since(start), srv.n)
			})
		})
	}
}
