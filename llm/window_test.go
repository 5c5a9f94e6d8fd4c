package llm_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// A request bigger than the server's whole token window, among small ones
// that keep coming, goes at the next reset: the server admits it into an
// empty window, and the client keeps one for it.
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
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the big request took %v, want it in the next window (under 2s)", took)
		}
		cancel()
		wg.Wait()
	})
}
