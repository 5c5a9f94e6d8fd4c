package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// The limiter zoo: the real client and limiter against every rate-limit
// algorithm of the mock, in the header styles real servers use, told the
// limit or not, with windows of 1 s and 1 min and latency under and over the
// window, under synctest's fake clock (minutes of fake time in a fraction of
// a second each). Each cell reports its wall time against the ideal for its
// algorithm (mock.Ideal: the least time a client knowing the algorithm and
// its state could take), the share of requests the server refused, and the
// items that failed or did not finish.
//
//	go test ./llm -run TestZoo -v                          # the table
//	LLMBATCH_ZOO_MD=zoo.md go test ./llm -run TestZoo      # also as markdown, for bench/README.md
//	LLMBATCH_ZOO_STRICT=1 go test ./llm -run TestZoo       # assert issue 10's "Done when" figures
//
// Each cell has two reference times: ideal, the best any client could do
// (it uses a bucket's initial burst and a fixed window's edges), and even,
// what a client pacing evenly at exactly the true rate takes (mock.Ideal
// against a GCRA with no burst: the time the limit allows, DESIGN §5a). The
// figures are held against the longer of the two, ref: a pacer that keeps
// cmd's 3% margin cannot beat the ideal by bursting, and no client can
// beat what the algorithm admits (a sliding counter's L-1 a window).
//
// By default the test asserts only what today's limiter does too: no item
// fails for anything but a rate-limit 429, and every item is accounted for
// within the cell's time (max(20x ref, 30 min) of fake time). With
// LLMBATCH_ZOO_STRICT=1 it asserts issue 10's "Done when": no item fails on
// a rate-limit 429, none is left unfinished, and the figures of
// zooCell.limits hold in every cell.

// zooTransport serves requests with the mock's handler in memory, so a run
// plays under synctest's fake clock.
type zooTransport struct {
	h   http.Handler
	log *slog.Logger // each request's send and answer, when the cell is traced
}

func (z zooTransport) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	sent := time.Now()
	z.h.ServeHTTP(rec, r)
	if z.log != nil {
		z.log.Debug("answer", "status", rec.Code, "took", time.Since(sent).Round(time.Millisecond), "bytes", r.ContentLength)
	}
	return rec.Result(), nil
}

// A zooCell is one server of the zoo and one way of meeting it.
type zooCell struct {
	group   string // requests, headers (a style sweep), tokens, hostile
	mock    mock.Config
	told    bool // the client is told the true limit (--rpm/--tpm, or -j for a concurrency cap)
	prompts []string
	workers int // -j
	// lib and front, for a limiter of another project (zoo_foreign_test.go):
	// front puts it before the handler of a mock that limits nothing, and
	// returns a stop for what it started; mock then only names the nearest
	// algorithm of the mock, for mock.Ideal, and lib is shown as the
	// headers.
	lib   string
	front func(t *testing.T, next http.Handler) (http.Handler, func())
}

func (c zooCell) name() string {
	told := "untold"
	if c.told {
		told = "told"
	}
	lim := c.mock.Limiter
	if c.group == "hostile" {
		lim = fmt.Sprintf("false claims %.0f%%", 100*c.mock.FalseClaims)
		if c.mock.TPM > 0 {
			lim += " + " + c.mock.Limiter
		}
	}
	return fmt.Sprintf("%s/%s/%s/%s/%v/%v", c.group, lim, c.headers(), told, c.mock.Window, c.mock.Latency)
}

// headers is the header style of the cell: the mock's, or the library's.
func (c zooCell) headers() string {
	if c.lib != "" {
		return c.lib
	}
	return c.mock.Headers
}

// zooResult is what a cell measured.
type zooResult struct {
	cell                  zooCell
	ideal, even, wall     time.Duration
	requests, refused     int64 // chat requests the server saw, and its rate-limit 429s
	claims                int64 // its false claims
	answered              int   // items answered
	failed429, failedElse int   // items that failed on a rate-limit 429, or on something else
	unfinished            int   // items with no answer when the cell's time ran out
	mostAttempts          int   // the most attempts one item took
}

// ref is the time the figures are held against.
func (r zooResult) ref() time.Duration { return max(r.ideal, r.even) }

func (r zooResult) ratio() float64 { return r.wall.Seconds() / r.ref().Seconds() }

func (r zooResult) refusedShare() float64 {
	return float64(r.refused) / float64(max(r.requests, 1))
}

// zooStrict tells whether issue 10's figures are asserted.
func zooStrict() bool { return os.Getenv("LLMBATCH_ZOO_STRICT") == "1" }

func TestZoo(t *testing.T) {
	table := zooTable(runCells(t, zooCells()))
	t.Log("\n" + table)
	writeZooMD(t, table)
}

// runCells runs cells side by side, each a subtest under "cells" that
// fails on what problems finds, and returns their results in order.
func runCells(t *testing.T, cells []zooCell) []zooResult {
	results := make([]zooResult, len(cells))
	t.Run("cells", func(t *testing.T) {
		for i, c := range cells {
			t.Run(c.name(), func(t *testing.T) {
				t.Parallel()
				results[i] = runZoo(t, c)
				for _, p := range results[i].problems(zooStrict()) {
					t.Error(p)
				}
			})
		}
	})
	return results
}

// writeZooMD writes table to the file LLMBATCH_ZOO_MD names, if any.
func writeZooMD(t *testing.T, table string) {
	if path := os.Getenv("LLMBATCH_ZOO_MD"); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runZoo runs one cell: the workers take the prompts in order, each through
// the real client, as batch's workers do.
func runZoo(t *testing.T, c zooCell) zooResult {
	even := c.mock
	even.Limiter, even.Bucket, even.Burst = mock.LimiterGCRA, false, 0
	// mock.Ideal leaves jitter out: the last answer may take up to
	// Jitter more than the latency.
	r := zooResult{cell: c, ideal: mock.Ideal(c.mock, c.prompts, c.workers) + c.mock.Jitter,
		even: mock.Ideal(even, c.prompts, c.workers) + c.mock.Jitter}
	synctest.Test(t, func(t *testing.T) {
		h := mock.New(c.mock)
		var served http.Handler = h
		var front *frontCounts
		if c.front != nil {
			h = mock.New(mock.Config{Latency: c.mock.Latency, Jitter: c.mock.Jitter, Seed: c.mock.Seed, Headers: mock.HeadersNone})
			lim, stop := c.front(t, h)
			defer stop()
			front = &frontCounts{next: lim}
			served = front
		}
		trace := zooTrace(t, c)
		client, err := llm.New(llm.Config{BaseURL: "http://zoo/v1", HTTPClient: zooTransport{served, trace}, Limiter: zooLimiter(c, trace),
			Concurrency: c.workers, Timeout: 10 * time.Minute, MaxAttempts: 6, Backoff: llm.FullJitter(time.Second, time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		deadline := max(20*r.ref(), 30*time.Minute)
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		var next atomic.Int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for range c.workers {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(c.prompts)); i = next.Add(1) - 1 {
					n, err := zooDo(ctx, client, c.prompts[i])
					mu.Lock()
					r.count(err)
					r.mostAttempts = max(r.mostAttempts, n)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		r.wall = time.Since(start)
		st := h.Stats()
		r.requests, r.refused, r.claims = st.OK+st.RateLimited+st.FalseClaims, st.RateLimited, st.FalseClaims
		if front != nil {
			r.requests, r.refused = front.requests.Load(), front.refused.Load()
		}
	})
	return r
}

// frontCounts serves requests through a limiter in front of the mock, all
// from one client address (the limiters key by it), and counts them and
// the limiter's 429s.
type frontCounts struct {
	next              http.Handler
	requests, refused atomic.Int64
}

func (f *frontCounts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = r.WithContext(r.Context()) // a copy: the client's request is its own
	r.RemoteAddr = "192.0.2.1:41000"
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	f.next.ServeHTTP(sw, r)
	f.requests.Add(1)
	if sw.status == http.StatusTooManyRequests {
		f.refused.Add(1)
	}
}

// statusWriter notes the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// zooLimiter is the limiter cmd builds: adapting, with its 3% margin, told
// the true limit per minute or nothing.
func zooLimiter(c zooCell, trace *slog.Logger) *llm.Limiter {
	cfg := llm.LimiterConfig{Concurrency: c.workers, Adapt: true, Margin: 0.03, Logger: trace}
	if c.told {
		perMinute := func(n int) int { return int(int64(n) * int64(time.Minute) / int64(c.mock.Window)) }
		cfg.RPM, cfg.TPM = perMinute(c.mock.RPM), perMinute(c.mock.TPM)
	}
	return llm.NewLimiterConfig(cfg)
}

// zooTrace is a logger of every change of pace, at its fake time since the
// start, for the cells whose name holds LLMBATCH_ZOO_TRACE; nil for others.
func zooTrace(t *testing.T, c zooCell) *slog.Logger {
	want := os.Getenv("LLMBATCH_ZOO_TRACE")
	if want == "" || !strings.Contains(c.name(), want) {
		return nil
	}
	start := time.Now()
	return slog.New(slog.NewTextHandler(traceWriter{t, start}, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Duration("t", time.Since(start).Round(time.Millisecond))
			}
			return a
		}}))
}

type traceWriter struct {
	t     *testing.T
	start time.Time
}

func (w traceWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// zooDo sends one prompt as batch does, its tokens estimated as batch's,
// and returns the attempts it took.
func zooDo(ctx context.Context, c *llm.Client, prompt string) (int, error) {
	body, err := json.Marshal(map[string]any{"model": "m", "messages": []llm.Message{llm.TextMessage("user", prompt)}})
	if err != nil {
		return 0, err
	}
	_, n, err := c.Do(ctx, &llm.Request{Model: "m", Body: body, Tokens: llm.EstimateTokens(prompt) + 4})
	return n, err
}

// count files one item's outcome.
func (r *zooResult) count(err error) {
	var ae *llm.APIError
	switch {
	case err == nil:
		r.answered++
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		r.unfinished++
	case errors.As(err, &ae) && ae.Kind == llm.RateLimited:
		r.failed429++
	default:
		r.failedElse++
	}
}

// problems lists what the cell got wrong: always an item that failed on
// something other than a rate-limit 429 or was not accounted for; when
// strict, also one that failed on a 429 or did not finish, and a miss of
// issue 10's figures.
func (r zooResult) problems(strict bool) []string {
	var p []string
	if n := r.failed429 + r.failedElse + r.unfinished + r.answered; n != len(r.cell.prompts) {
		p = append(p, fmt.Sprintf("%d outcomes for %d items", n, len(r.cell.prompts)))
	}
	if r.failedElse > 0 || (strict && (r.failed429 > 0 || r.unfinished > 0)) {
		p = append(p, fmt.Sprintf("%d items failed on a rate-limit 429, %d on something else, %d unfinished after %v",
			r.failed429, r.failedElse, r.unfinished, r.wall))
	}
	if !strict {
		return p
	}
	maxRatio, maxRefused := r.cell.limits()
	if r.cell.group == "hostile" {
		// A false claim costs at most its Retry-After (1 s), to the
		// request that met it: the run takes at most the reference, the
		// claims' seconds spread over the workers, the longest chain of
		// claims one item met (the last such item ends the run) and a
		// second for the slow start. A client obeying the claims stalls
		// for 6 minutes.
		spread := time.Duration(r.claims) * time.Second / time.Duration(r.cell.workers)
		chain := time.Duration(max(r.mostAttempts-1, 0)) * time.Second
		bound := time.Duration(1.1*float64(r.ref())) + spread + chain + time.Second
		if r.wall > bound {
			p = append(p, fmt.Sprintf("took %v with %d false claims, want at most %v", r.wall, r.claims, bound))
		}
		return p
	}
	if r.ratio() > maxRatio {
		p = append(p, fmt.Sprintf("took %v, %.3fx the reference %v, want at most %.2fx", r.wall, r.ratio(), r.ref(), maxRatio))
	}
	if r.refusedShare() > maxRefused {
		p = append(p, fmt.Sprintf("%.2f%% of requests refused, want at most %.1f%%", 100*r.refusedShare(), 100*maxRefused))
	}
	return p
}

// limits are issue 10's figures for the cell: told, at most 1.03x the ideal
// and 0.5% refused (1.10x on a token limit); untold, 1.10x and 2% on a
// request limit, 1.2x and 3% on a token limit.
func (c zooCell) limits() (ratio, refused float64) {
	tokens := c.mock.TPM > 0
	switch {
	case c.told && tokens:
		return 1.10, 0.005
	case c.told:
		return 1.03, 0.005
	case tokens:
		return 1.2, 0.03
	default:
		return 1.10, 0.02
	}
}

// zooTable writes the results as a markdown table.
func zooTable(results []zooResult) string {
	var b strings.Builder
	b.WriteString("| cell | limiter | headers | told | window | latency | items | ideal | even | wall | x ideal | x ref | refused | failed | unfinished |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		c := r.cell
		told := "no"
		if c.told {
			told = "yes"
		}
		lim := c.mock.Limiter
		if c.group == "hostile" {
			lim = fmt.Sprintf("false claims %.0f%% (%d)", 100*c.mock.FalseClaims, r.claims)
			if c.mock.TPM > 0 {
				lim += " + " + c.mock.Limiter
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %v | %v | %d | %.1fs | %.1fs | %.1fs | %.2f | %.2f | %.1f%% | %d | %d |\n",
			c.group, lim, c.headers(), told, c.mock.Window, c.mock.Latency, len(c.prompts),
			r.ideal.Seconds(), r.even.Seconds(), r.wall.Seconds(), r.wall.Seconds()/r.ideal.Seconds(), r.ratio(),
			100*r.refusedShare(), r.failed429+r.failedElse, r.unfinished)
	}
	return b.String()
}

// words makes a prompt of about n characters of words, from r.
func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString([]string{"the", "ticket", "says", "my", "card", "was", "charged", "twice", "please", "help"}[r.IntN(10)])
		b.WriteByte(' ')
	}
	return b.String()
}

// The prompts of the zoo, made once: the cells only read them.
var (
	zooRequests600 = sync.OnceValue(func() []string { return requestPrompts(600) })
	zooRequests120 = sync.OnceValue(func() []string { return requestPrompts(120) })
	zooTokens600   = sync.OnceValue(func() []string { return tokenPrompts(600) })
	zooTokens120   = sync.OnceValue(func() []string { return tokenPrompts(120) })
)

// requestPrompts are n prompts of 50 to 400 characters.
func requestPrompts(n int) []string {
	r := rand.New(rand.NewPCG(10, 1))
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("item %d: ", i) + words(r, 50+r.IntN(351))
	}
	return p
}

// tokenPrompts are n prompts, seven in eight of 50 to 400 characters and
// one in eight of 8,000 to 17,500, which carry about 89% of the tokens.
func tokenPrompts(n int) []string {
	r := rand.New(rand.NewPCG(10, 2))
	p := make([]string, n)
	for i := range p {
		size := 50 + r.IntN(351)
		if i%8 == 5 {
			size = 8000 + r.IntN(9501)
		}
		p[i] = fmt.Sprintf("item %d: ", i) + words(r, size)
	}
	return p
}
