package llm_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// flakyGateway answers 429 with `retry-after-ms: 5` and no rate-limit
// headers to one attempt in ten, at random, whatever the pace: a gateway
// that sheds load it does not have.
type flakyGateway struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (f *flakyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	refuse := f.rng.IntN(10) == 0
	f.mu.Unlock()
	if refuse {
		w.Header().Set("retry-after-ms", "5")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"Rate limit reached for requests.","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
}

// TestFlakyGateway: random 429s cost no item, however many there are. The
// fake time the run takes is logged (go test ./llm -run TestFlakyGateway
// -v): refusals that come whatever the pace are the estimator's weakest
// case (see bench/README.md, "Known limits").
func TestFlakyGateway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &flakyGateway{rng: rand.New(rand.NewPCG(7, 7))}
		lim := llm.NewLimiterConfig(llm.LimiterConfig{Adapt: true, Margin: 0.03, Concurrency: 32})
		c, err := llm.New(llm.Config{BaseURL: "http://gw/v1", HTTPClient: zooTransport{gw}, Limiter: lim,
			MaxAttempts: 6, Backoff: llm.FullJitter(time.Second, time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		const items = 600
		var next, failed atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range 32 {
			wg.Go(func() {
				for i := next.Add(1); i <= items; i = next.Add(1) {
					body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"item %d"}]}`, i)
					if _, _, err := c.Do(t.Context(), &llm.Request{Model: "m", Body: []byte(body), Tokens: 10}); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		t.Logf("%d items through a gateway refusing one attempt in ten at random: %v (with no refusals: %v)",
			items, took.Round(time.Millisecond), time.Duration(items/32+1)*20*time.Millisecond)
		if failed.Load() > 0 {
			t.Errorf("%d items failed, want none: a random 429 is not a verdict on an item", failed.Load())
		}
	})
}
