package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestToldTokensInTheServersCount runs prompts whose estimates count their
// prompts twice over (a tokenizer not the server's, with a margin) against
// a server told to the client exactly: 10,000 tokens a second, counted as
// its usage reports them. Paced by the estimates, the run would take twice
// the time the limit allows; paced in the server's tokens, which the
// answers' usage teaches (and a twentieth over), about that time. With max_tokens in the bodies,
// the budget is counted by the server as it is: learning the scale over
// the whole estimate instead of its prompt part would send 1.6 times the
// limit and draw 429s.
func TestToldTokensInTheServersCount(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxTokens int
		maxRatio  float64 // of the time the limit allows; paced by the estimates: 2.06x, 1.29x
	}{{"prompts only", 0, 1.3}, {"with max_tokens", 300, 1.15}} {
		t.Run(tc.name, func(t *testing.T) {
			const n, limit = 1000, 10_000
			prompt := strings.Repeat("word ", 80) // 100 tokens as the server counts
			var took time.Duration
			var limited, counted int64
			synctest.Test(t, func(t *testing.T) {
				h := mock.New(mock.Config{TPM: limit, Window: time.Second, Latency: 20 * time.Millisecond})
				lim := llm.NewLimiterConfig(llm.LimiterConfig{TPM: limit * 60, Adapt: true, Margin: 0.03, Concurrency: 32})
				c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: handlerClient{h: h}, Limiter: lim,
					MaxAttempts: 20, Backoff: llm.FullJitter(100*time.Millisecond, 2*time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				req := map[string]any{"model": "m", "messages": []llm.Message{llm.TextMessage("user", prompt)}}
				if tc.maxTokens > 0 {
					req["max_tokens"] = tc.maxTokens
				}
				body, err := json.Marshal(req)
				if err != nil {
					t.Fatal(err)
				}
				tokens := 2*llm.EstimateTokens(prompt) + tc.maxTokens
				var next atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				for range 32 {
					wg.Go(func() {
						for next.Add(1) <= n {
							r := &llm.Request{Model: "m", Body: body, Tokens: tokens, Output: tc.maxTokens}
							if _, _, err := c.Do(context.Background(), r); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				took = time.Since(start)
				st := h.Stats()
				limited, counted = st.RateLimited, st.PromptTokens+int64(n*tc.maxTokens)
			})
			ideal := time.Duration(float64(counted) / limit * float64(time.Second))
			t.Logf("%v for %d tokens counted: %.2fx the %v the limit allows; %d 429s", took, counted, took.Seconds()/ideal.Seconds(), ideal, limited)
			if took.Seconds() > tc.maxRatio*ideal.Seconds() {
				t.Errorf("took %v, want at most %.2fx the %v the limit allows", took, tc.maxRatio, ideal)
			}
			if limited > n/50 {
				t.Errorf("%d 429s of %d requests, want at most 2%%", limited, n)
			}
		})
	}
}
