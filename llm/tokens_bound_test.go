package llm_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

type tokenScenario struct {
	name      string
	serverTPS int // tokens per one-second window
	clientTPM int // --tpm, per minute; 0: unset
	noHeaders bool
	bucket    bool // the server's limit refills continuously (OpenAI's kind), not per fixed window
	max429    float64
	maxSlow   float64
}

// tokenItems makes n prompts, mostly short, one in ten long (8,000 to
// 20,000 characters), the long ones carrying most of the tokens.
func tokenItems(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	items := make([]string, n)
	for i := range items {
		size := 100 + r.IntN(200)
		if i%10 == 3 {
			size = 8000 + r.IntN(12000)
		}
		items[i] = fmt.Sprintf("item %d ", i) + strings.Repeat("x", size)
	}
	return items
}

// runTokens pushes the items through an adaptive limiter against the mock
// limiting tokens per one-second window, under synctest's fake clock. It
// returns the time taken, the 429s, the ideal time, and the longest a short
// item waited from its turn to its answer.
func runTokens(t *testing.T, sc tokenScenario, items []string) (took time.Duration, limited int64, ideal time.Duration, shortWait time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		h := mock.New(mock.Config{TPM: sc.serverTPS, Window: time.Second, Latency: 50 * time.Millisecond, Bucket: sc.bucket})
		lim := llm.NewLimiterConfig(llm.LimiterConfig{TPM: sc.clientTPM * 60, Adapt: true, Margin: 0.03, Concurrency: 32})
		c, err := llm.New(llm.Config{BaseURL: "http://mock/v1", HTTPClient: handlerClient{h, sc.noHeaders},
			Limiter: lim, MaxAttempts: 100, Backoff: llm.FullJitter(100*time.Millisecond, 2*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		var next atomic.Int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for range 32 {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(items)); i = next.Add(1) - 1 {
					p := items[i]
					body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}]}`, p)
					began := time.Now()
					if _, _, err := c.Do(context.Background(), &llm.Request{Model: "m", Body: []byte(body), Tokens: len(p)/4 + 4}); err != nil {
						t.Errorf("item %d: %v", i, err)
					}
					if len(p) < 1000 {
						mu.Lock()
						shortWait = max(shortWait, time.Since(began))
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		took = time.Since(start)
		st := h.Stats()
		limited = st.RateLimited
		ideal = time.Duration(float64(st.PromptTokens) / float64(sc.serverTPS) * float64(time.Second))
	})
	return took, limited, ideal, shortWait
}

// TestTokenBound checks pacing against a server limiting tokens, not
// requests: told the limit or not, the run keeps near the ideal time with
// few 429s. The bounds are loose; bench/ has the figures.
func TestTokenBound(t *testing.T) {
	items := tokenItems(benchN(600))
	for _, sc := range []tokenScenario{
		// With the server's window in its headers, issue 10's targets hold:
		// told 1.2x and 2% here (the 1.10x is the zoo's), untold
		// its 1.2x and 3% (a median of 10 429s, 1.6%, in 20 runs).
		{name: "tpm told, headers", serverTPS: 20000, clientTPM: 20000, max429: 0.02, maxSlow: 1.2},
		{name: "not told, headers", serverTPS: 20000, max429: 0.03, maxSlow: 1.2}, // untold, a token limit: 3%
		{name: "tpm told, bucket", serverTPS: 20000, clientTPM: 20000, bucket: true, max429: 0.02, maxSlow: 1.2},
		// Told nothing, a refilling bucket: 0.92-0.94x in 40 runs of 40
		// (the tracker follows a bucket only once its resets keep in step
		// with use; it used to misread one run in five, up to 2.7x). Under
		// -race, 0.99x at worst in 80 runs, but 1.21-1.22x in 2 of 105
		// whole-package runs: hence 1.3x.
		{name: "not told, bucket", serverTPS: 20000, bucket: true, max429: 0.02, maxSlow: 1.3},
		// Without, told: the token pace's own second keeps any second to
		// the pace, so no 429 (0 in 20 runs, 1.10x median, 1.13x worst; a
		// rate.Limiter alone let a second's worth and its burst through,
		// 2 to 22 429s in a run).
		{name: "tpm told, no headers", serverTPS: 20000, clientTPM: 20000, noHeaders: true, max429: 0.005, maxSlow: 1.2},
		// Told nothing and no headers, loose bounds: goroutine order varies
		// from run to run, and with it how well long items pack into
		// windows whose edges the client cannot see. They catch a limiter
		// that does not pace tokens (13x slower before). 40 runs on
		// 2026-12-01: 1.02-1.71x (median 1.2) at 6a33b74, 1.04-1.81x at
		// 50d6bd6, so 2.2x; the 429s of 40 runs: median 10 (1.6%), the
		// worst 63 (9.5%); on 2026-12-01 at 2d5996b, 150 runs: median 5,
		// worst 82, and 108 (15%) once in a whole-package run: hence
		// 20%. A storm is many times that (a limiter that does not pace
		// tokens: thousands).
		{name: "not told, no headers", serverTPS: 20000, noHeaders: true, max429: 0.2, maxSlow: 2.2},
	} {
		t.Run(sc.name, func(t *testing.T) {
			took, limited, ideal, shortWait := runTokens(t, sc, items)
			share := float64(limited) / float64(int64(len(items))+limited)
			t.Logf("%s: %v (%.2fx ideal %v), %d 429s (%.1f%%), longest short item %v", sc.name, took.Round(time.Millisecond),
				took.Seconds()/ideal.Seconds(), ideal.Round(time.Millisecond), limited, 100*share, shortWait.Round(time.Millisecond))
			if share > sc.max429 {
				t.Errorf("%.1f%% of requests got 429, want at most %.1f%%", 100*share, 100*sc.max429)
			}
			if took.Seconds() > sc.maxSlow*ideal.Seconds() {
				t.Errorf("took %v, want at most %.2fx the ideal %v", took, sc.maxSlow, ideal)
			}
		})
	}
}

// benchN is the item count of the scenario tests: LLMBATCH_SCENARIO_N
// makes them longer, for the figures in bench/README.md.
func benchN(def int) int {
	if n, err := strconv.Atoi(os.Getenv("LLMBATCH_SCENARIO_N")); err == nil && n > 0 {
		return n
	}
	return def
}
