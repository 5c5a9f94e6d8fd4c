package llm_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// The wide zoo: cells off the zoo's grid, so that pacing tuned to 20 a
// second, 24 a minute, 50 ms and 1.5 windows shows. Windows of 2 s, 5 s and
// 10 s as well as 1 s and 1 min, rates from 3 a second to 50 a second and
// 100 a minute, bursts of 0 and 1.0, latencies of 300 ms and 3 s and
// jittered ones, -j 4 to 64, and token limits such as 30,000 tokens per 10
// s. Items are sized so the reference is 20-60 s of fake time, or 3-5
// windows for long windows. Each cell is judged by the zoo's limits().
//
//	LLMBATCH_ZOO_WIDE=1 go test ./llm -run TestZooWide -v -count=1
//	LLMBATCH_ZOO_WIDE=1 LLMBATCH_ZOO_STRICT=1 LLMBATCH_ZOO_MD=wide.md go test ./llm -run TestZooWide -count=1
//
// It is opt-in (some 50 cells and minutes of fake time each), and its cell
// names carry the rate, -j, burst and jitter in the group field, e.g.
// wide-100per10s-j32-b0/window/kong/told/10s/50ms.

// A wideSpec is one off-grid server, run told and untold.
type wideSpec struct {
	alg, style      string
	window          time.Duration
	limit           int // requests (or tokens, with tokens) per window
	tokens          bool
	items           int
	latency, jitter time.Duration
	workers         int
	burst           float64       // for leaky and gcra
	first           bool          // fixed windows start at a request (mock.Config.FirstWindows)
	penalty         time.Duration // the penalty box's ban; 0: a window
}

// wideSpecs are the servers of the wide zoo.
var wideSpecs = []wideSpec{
	// A gateway's "100 per 10 s", 400 items: 4 windows.
	{alg: mock.LimiterWindow, style: mock.HeadersKong, window: 10 * time.Second, limit: 100, items: 400, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersOpenAI, window: 10 * time.Second, limit: 100, items: 400, latency: 300 * time.Millisecond, workers: 32},
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersIETF, window: 10 * time.Second, limit: 100, items: 400, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterBucket, style: mock.HeadersOpenAI, window: 10 * time.Second, limit: 100, items: 400, latency: 3 * time.Second, workers: 64},
	{alg: mock.LimiterGCRA, style: mock.HeadersGitHub, window: 10 * time.Second, limit: 100, items: 400, latency: 300 * time.Millisecond, workers: 8},
	{alg: mock.LimiterLeaky, style: mock.HeadersNone, window: 10 * time.Second, limit: 100, items: 400, latency: 3 * time.Second, workers: 32},
	// 25 per 5 s (5/s), 150 items: 30 s.
	{alg: mock.LimiterLeaky, style: mock.HeadersNone, window: 5 * time.Second, limit: 25, items: 150, latency: 300 * time.Millisecond, workers: 8},
	{alg: mock.LimiterGCRA, style: mock.HeadersGitHub, window: 5 * time.Second, limit: 25, items: 150, latency: 50 * time.Millisecond, workers: 32, burst: 1},
	{alg: mock.LimiterPenalty, style: mock.HeadersTraefik, window: 5 * time.Second, limit: 25, items: 150, latency: 300 * time.Millisecond, workers: 8},
	// 6 per 2 s (3/s), 90 items: 30 s.
	{alg: mock.LimiterWindow, style: mock.HeadersKong, window: 2 * time.Second, limit: 6, items: 90, latency: 300 * time.Millisecond, workers: 4},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersRetryAfter, window: 2 * time.Second, limit: 6, items: 90, latency: 3 * time.Second, workers: 32},
	{alg: mock.LimiterBucket, style: mock.HeadersOpenAI, window: 2 * time.Second, limit: 6, items: 90, latency: 50 * time.Millisecond, jitter: 300 * time.Millisecond, workers: 4},
	// 50 a second, 1,500 items: 30 s.
	{alg: mock.LimiterBucket, style: mock.HeadersOpenAI, window: time.Second, limit: 50, items: 1500, latency: 50 * time.Millisecond, jitter: 200 * time.Millisecond, workers: 64},
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersIETF, window: time.Second, limit: 50, items: 1500, latency: 300 * time.Millisecond, workers: 64},
	// 5 a second, 150 items: 30 s.
	{alg: mock.LimiterLeaky, style: mock.HeadersNone, window: time.Second, limit: 5, items: 150, latency: 50 * time.Millisecond, workers: 8, burst: 1},
	{alg: mock.LimiterGCRA, style: mock.HeadersGitHub, window: time.Second, limit: 5, items: 150, latency: 3 * time.Second, workers: 32},
	// 100 a minute, 400 items: 4 windows.
	{alg: mock.LimiterWindow, style: mock.HeadersKong, window: time.Minute, limit: 100, items: 400, latency: 3 * time.Second, workers: 32},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersOpenAI, window: time.Minute, limit: 100, items: 400, latency: 300 * time.Millisecond, jitter: time.Second, workers: 8},
	{alg: mock.LimiterLeaky, style: mock.HeadersNone, window: time.Minute, limit: 100, items: 400, latency: 50 * time.Millisecond, workers: 32, burst: 1},
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersIETF, window: time.Minute, limit: 100, items: 400, latency: 3 * time.Second, workers: 64},
	// Answers as slow and as uneven as a model's: 0.5-4.5 s and 1-7 s,
	// uniformly (-j 128, so that the workers are not the bound).
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersOpenAI, window: time.Second, limit: 20, items: 600, latency: 500 * time.Millisecond, jitter: 4 * time.Second, workers: 128},
	{alg: mock.LimiterGCRA, style: mock.HeadersNone, window: time.Minute, limit: 600, items: 1200, latency: time.Second, jitter: 6 * time.Second, workers: 128},
	{alg: mock.LimiterBucket, style: mock.HeadersIETF, window: 10 * time.Second, limit: 200, items: 600, latency: time.Second, jitter: 6 * time.Second, workers: 128},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersIETF, window: 10 * time.Second, limit: 200, items: 1200, latency: time.Second, jitter: 6 * time.Second, workers: 128},
	{alg: mock.LimiterLeaky, style: mock.HeadersNone, window: 10 * time.Second, limit: 200, items: 1200, latency: time.Second, jitter: 6 * time.Second, workers: 128, burst: 0.25},
	// Token limits, the zoo's token prompts (one in eight long).
	{alg: mock.LimiterSlidingLog, style: mock.HeadersOpenAI, window: 10 * time.Second, limit: 30_000, tokens: true, items: 300, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterBucket, style: mock.HeadersOpenAI, window: 10 * time.Second, limit: 30_000, tokens: true, items: 300, latency: 3 * time.Second, workers: 32},
	{alg: mock.LimiterWindow, style: mock.HeadersOpenAI, window: 5 * time.Second, limit: 20_000, tokens: true, items: 300, latency: 300 * time.Millisecond, workers: 8},
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersOpenAI, window: 2 * time.Second, limit: 8_000, tokens: true, items: 200, latency: 300 * time.Millisecond, jitter: 300 * time.Millisecond, workers: 64},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersIETF, window: time.Minute, limit: 60_000, tokens: true, items: 300, latency: 300 * time.Millisecond, workers: 32},
	{alg: mock.LimiterBucket, style: mock.HeadersOpenAI, window: time.Second, limit: 5_000, tokens: true, items: 300, latency: 50 * time.Millisecond, workers: 4},
	// Windows of 5 s, 10 s and a minute that say nothing, at rates of
	// 10-20 a second (the opening spends the window, a lockout follows).
	{alg: mock.LimiterSlidingLog, style: mock.HeadersNone, window: 5 * time.Second, limit: 100, items: 600, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersNone, window: 10 * time.Second, limit: 200, items: 600, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersNone, window: 10 * time.Second, limit: 200, items: 600, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterWindow, style: mock.HeadersNone, window: time.Minute, limit: 600, items: 1800, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersNone, window: time.Minute, limit: 600, items: 1800, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterSlidingCounter, style: mock.HeadersNone, window: time.Minute, limit: 600, items: 1800, latency: 50 * time.Millisecond, workers: 32},
	// Token limits of 10 s and of a minute with no headers or Retry-After
	// only, long prompts near a second of the pace (told: the own
	// second's packing).
	{alg: mock.LimiterSlidingLog, style: mock.HeadersNone, window: 10 * time.Second, limit: 40_000, tokens: true, items: 600, latency: 50 * time.Millisecond, workers: 64},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersNone, window: time.Minute, limit: 240_000, tokens: true, items: 600, latency: time.Second, jitter: 5 * time.Second, workers: 64},
	{alg: mock.LimiterSlidingLog, style: mock.HeadersRetryAfter, window: time.Minute, limit: 120_000, tokens: true, items: 600, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterWindow, style: mock.HeadersNone, window: time.Minute, limit: 120_000, tokens: true, items: 600, latency: 50 * time.Millisecond, workers: 32},
	// The npm limiters of bench/node.sh: fixed windows that start at the
	// client's first request (express-rate-limit, rate-limiter-flexible),
	// no hint; rate-limiter-flexible's blockDuration, a 2 s ban.
	{alg: mock.LimiterWindow, style: mock.HeadersNone, window: time.Second, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true},
	{alg: mock.LimiterWindow, style: mock.HeadersNone, window: time.Minute, limit: 120, items: 360, latency: 50 * time.Millisecond, workers: 32, first: true},
	{alg: mock.LimiterPenalty, style: mock.HeadersNone, window: time.Second, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true, penalty: 2 * time.Second},
	{alg: mock.LimiterPenalty, style: mock.HeadersRetryAfter, window: time.Second, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true, penalty: 2 * time.Second},
	// The same ban with windows a hundredth longer than the pace
	// 20 a second first found: on the real clock a request reached the
	// proxy a millisecond early, the second ban came at once, and the run
	// took 12x its time (bench/node.sh ALG=rlf-block).
	{alg: mock.LimiterPenalty, style: mock.HeadersNone, window: 1010 * time.Millisecond, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true, penalty: 2 * time.Second},
	// A review's servers: fixed windows of 2 s and 3 s with no hint, bans
	// of 10 s and 500 ms, the 2 s ban answered 1.5 s late, a token bucket
	// and a GCRA with no headers.
	{alg: mock.LimiterWindow, style: mock.HeadersNone, window: 3 * time.Second, limit: 60, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true},
	{alg: mock.LimiterWindow, style: mock.HeadersNone, window: 2 * time.Second, limit: 40, items: 600, latency: 50 * time.Millisecond, workers: 32},
	{alg: mock.LimiterPenalty, style: mock.HeadersNone, window: time.Second, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true, penalty: 10 * time.Second},
	{alg: mock.LimiterPenalty, style: mock.HeadersNone, window: time.Second, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, first: true, penalty: 500 * time.Millisecond},
	{alg: mock.LimiterPenalty, style: mock.HeadersNone, window: time.Second, limit: 20, items: 600, latency: 1500 * time.Millisecond, workers: 64, first: true, penalty: 2 * time.Second},
	{alg: mock.LimiterBucket, style: mock.HeadersNone, window: time.Second, limit: 20, items: 600, latency: 50 * time.Millisecond, workers: 32, burst: 5},
	{alg: mock.LimiterGCRA, style: mock.HeadersNone, window: 10 * time.Second, limit: 200, items: 600, latency: 50 * time.Millisecond, workers: 32},
	// nginx's limit_req as bench/nginx.sh runs it with no burst (its
	// default): 10 a second, a request each 100 ms, answered in 200 ms, so
	// two are in the server's hands at the rate; -j 16. Untold, the
	// opening's refusals each found one in hand and were taken for a
	// concurrency cap of 1 in about half the real runs.
	{alg: mock.LimiterLeaky, style: mock.HeadersNone, window: time.Second, limit: 10, items: 600, latency: 200 * time.Millisecond, workers: 16},
}

// The wide zoo's prompts, made once and sliced: the cells only read them.
var (
	wideRequests = sync.OnceValue(func() []string { return requestPrompts(1800) })
	wideTokens   = sync.OnceValue(func() []string { return tokenPrompts(600) })
)

// cell is the spec as a zoo cell, told or not.
func (s wideSpec) cell(told bool) zooCell {
	cfg := mock.Config{Limiter: s.alg, Headers: s.style, Window: s.window, Latency: s.latency, Jitter: s.jitter,
		Burst: s.burst, Seed: 1, FirstWindows: s.first, Penalty: s.penalty}
	unit, prompts := "per", wideRequests()
	if s.tokens {
		cfg.TPM, unit, prompts = s.limit, "tok", wideTokens()
	} else {
		cfg.RPM = s.limit
	}
	group := fmt.Sprintf("wide-%d%s%v-j%d-b%v", s.limit, unit, s.window, s.workers, s.burst)
	if s.jitter > 0 {
		group += fmt.Sprintf("-jit%v", s.jitter)
	}
	if s.first {
		group += "-first"
	}
	if s.penalty > 0 {
		group += fmt.Sprintf("-ban%v", s.penalty)
	}
	return zooCell{group: group, mock: cfg, told: told, prompts: prompts[:s.items], workers: s.workers}
}

func wideCells() []zooCell {
	var cells []zooCell
	for _, s := range wideSpecs {
		cells = append(cells, s.cell(true), s.cell(false))
	}
	return cells
}

func TestZooWide(t *testing.T) {
	if os.Getenv("LLMBATCH_ZOO_WIDE") != "1" {
		t.Skip("the wide zoo runs with LLMBATCH_ZOO_WIDE=1")
	}
	results := runCells(t, wideCells())
	table, misses := zooTable(results), wideMisses(results)
	t.Logf("\n%s\nmisses:\n%s\n%d cells, %d miss issue 10's figures", table, zooTable(misses), len(results), len(misses))
	writeZooMD(t, table)
}

// wideMisses are the results missing issue 10's figures.
func wideMisses(results []zooResult) []zooResult {
	var m []zooResult
	for _, r := range results {
		if len(r.problems(true)) > 0 {
			m = append(m, r)
		}
	}
	return m
}

func TestWideCellNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range wideCells() {
		n := c.name()
		if seen[n] || strings.Count(n, "/") != 5 {
			t.Errorf("wide cell name %q is repeated or not six fields", n)
		}
		seen[n] = true
		if len(c.prompts) == 0 || c.workers == 0 {
			t.Errorf("%s: %d prompts, -j %d", n, len(c.prompts), c.workers)
		}
	}
}
