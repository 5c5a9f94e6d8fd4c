package llm

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
	"github.com/llmbatch/llmbatch/llm/pace"
	"github.com/llmbatch/llmbatch/llm/pace/shared"
)

// TestSharedTokensSettled checks that the tokens a request reserves of the
// key's budget in Redis before it is sent (its prompt and max_tokens) are
// settled by its answer: the answer's usage gives back what it did not use
// or takes what it used beyond, a 429 gives back all, and a request lost
// on the way keeps what it took. Another process's store reads what the
// budget owes afterwards.
func TestSharedTokensSettled(t *testing.T) {
	srv := redistest.Start(t)
	const tpm = 60000 // 1000 tokens a second: the reservation of 1000 is a second of the key's budget
	tests := []struct {
		name     string
		reply    reply
		min, max time.Duration // what the budget owes just after
	}{
		{"used less", reply{body: usageBody(10, 20)}, 0, 400 * time.Millisecond},                   // 30 tokens: 30 ms
		{"used more", reply{body: usageBody(500, 2000)}, 1800 * time.Millisecond, 3 * time.Second}, // 2.5 s
		{"refused", reply{status: 429}, 0, 400 * time.Millisecond},
		{"lost", reply{hang: true}, 400 * time.Millisecond, time.Second}, // the second less the 300 ms timeout
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fmt.Sprintf("m%d", i)
			s := scripted(t, tt.reply)
			c := newTestClient(t, s.URL(), func(c *Config) {
				c.MaxAttempts, c.Timeout = 1, 300*time.Millisecond
				c.Limiter = pace.New(pace.Config{TPM: tpm, Shared: shared.NewClient(openStore(t, srv, "a"), s.URL(), testKey, nil)})
			})
			req := &Request{Model: model, Body: []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"hello"}],"max_tokens":990}`), Tokens: 1000}
			c.Do(t.Context(), req)
			// With the whole burst asked, Take's wait is what the budget owes.
			owed, err := openStore(t, srv, "b").Take(t.Context(), shared.LaneName(s.URL(), model, testKey), shared.Tokens, tpm, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if owed < tt.min || owed > tt.max {
				t.Errorf("after a request that reserved 1000 tokens (a second of the budget), the budget owes %v, want %v to %v", owed, tt.min, tt.max)
			}
		})
	}
}

func usageBody(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"c-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		prompt, completion, prompt+completion)
}

func openStore(t *testing.T, srv *redistest.Server, id string) *shared.Store {
	t.Helper()
	s, err := shared.Open(t.Context(), shared.Config{URL: srv.URL(""), ID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
