package batch

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestRunPacesTokensAsTheServerCounts runs items whose count doubles their
// prompts (a tokenizer not the server's) with max_tokens set, told the
// server's true token limit, against a server whose headers say nothing
// of what is left (a 429's Retry-After only), so the pace alone keeps the
// run under the limit. The client paces each request in the
// server's tokens, the prompt's estimate scaled by what the answers' usage
// teaches and max_tokens as it is, so it draws (almost) no 429. Were the
// request's max_tokens not told apart from its estimate, the scale would
// be learned over both and the run sent at 1.6 times the limit.
func TestRunPacesTokensAsTheServerCounts(t *testing.T) {
	const n, perSecond, maxTokens = 160, 40_000, 400
	var ls []string
	for i := range n {
		ls = append(ls, fmt.Sprintf(`{"id":"t%d","prompt":"%d %s"}`, i, i, strings.Repeat("word ", 80)))
	}
	h := mock.New(mock.Config{TPM: perSecond, Window: time.Second, Latency: 10 * time.Millisecond, Headers: mock.HeadersRetryAfter})
	j := newJob(t, h, ls...)
	lim := llm.NewLimiterConfig(llm.LimiterConfig{TPM: perSecond * 60, Adapt: true, Margin: 0.03, Concurrency: 16})
	c, err := llm.New(llm.Config{BaseURL: j.server.URL + "/v1", Limiter: lim, MaxAttempts: 20,
		Backoff: llm.FullJitter(50*time.Millisecond, time.Second), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mt := maxTokens
	sum, err := j.run(func(cfg *Config) {
		cfg.Client, cfg.Concurrency, cfg.MaxTokens = c, 16, &mt
		cfg.Count = func(s string) int { return 2 * llm.EstimateTokens(s) }
	})
	if err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	t.Logf("%d done, %d 429s, %d prompt tokens counted", sum.Done, st.RateLimited, st.PromptTokens)
	if sum.Done != n {
		t.Errorf("%d done, want %d", sum.Done, n)
	}
	if st.RateLimited > n/50 {
		t.Errorf("%d 429s for %d items, want at most 2%%", st.RateLimited, n)
	}
}

// TestMergedOutputIsTheBodysBudget checks that the output budget given to
// the limiter for a merged request is the max_tokens its body asks for.
func TestMergedOutputIsTheBodysBudget(t *testing.T) {
	for _, mt := range []int{0, 50} {
		var items []*Item
		for i := range 7 {
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"p%d"}]}`, i)
			if mt > 0 {
				body = fmt.Sprintf(`{"model":"m","max_tokens":%d,"messages":[{"role":"user","content":"p%d"}]}`, mt, i)
			}
			items = append(items, &Item{ID: fmt.Sprint(i), Model: "m", Body: []byte(body), MaxOutput: mt, PromptTokens: 2, Prompt: fmt.Sprintf("p%d", i)})
		}
		body, _, err := buildMerged(items, false)
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if got := mergedOutput(items); got != req.MaxTokens {
			t.Errorf("max_tokens %d a item: mergedOutput %d, the body asks for %d", mt, got, req.MaxTokens)
		}
	}
}
