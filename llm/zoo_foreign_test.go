package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// The foreign zoo: rate limiters nobody on this team wrote, five Go
// libraries as their READMEs deploy them in front of an API, each wrapping
// the handler of a mock that limits nothing, keyed by the client's address
// (frontCounts gives every request the same one). Each cell is judged by
// the zoo's limits() against mock.Ideal of the mock algorithm nearest to
// what the library's code does:
//
//   - go-chi/httprate (LimitByIP): a sliding window counter, the previous
//     window weighted by its share still inside, windows aligned to the
//     limiter's start; mock's sliding-counter. It counts only what it
//     admits (mock's counts refusals too, which the ideal never sends) and
//     rounds the estimate, so it admits a little more. Headers:
//     X-RateLimit-Limit/-Remaining, X-RateLimit-Reset the Unix second the
//     current window ends, on a 429 Retry-After the window's length.
//   - throttled/v2 (GCRARateLimiterCtx, memstore, VaryBy RemoteAddr): GCRA
//     with MaxBurst 5, a tolerance of 6 intervals; mock's gcra with a burst
//     of 5 (Burst 5/L). X-RateLimit-Reset is the delta until the TAT is now
//     and Retry-After the wait, both seconds rounded up.
//   - didip/tollbooth/v7 (NewLimiter(max, nil), LimitHandler): x/time/rate,
//     max per second with a burst of max, starting full; mock's bucket of L
//     per 1 s. Its rate is per second: "120 a minute" is NewLimiter(2),
//     2 a second with a burst of 2. Headers: X-Rate-Limit-Limit "20.00",
//     RateLimit-Limit/-Remaining and RateLimit-Reset always "1"; no
//     Retry-After.
//   - ulule/limiter/v3 (memory store, stdlib middleware): a fixed window
//     that starts at the first request after the last one expired, refused
//     requests counted but not moving it; mock's window with FirstWindows.
//     X-RateLimit-Reset is the window's end in Unix seconds, cut down; no
//     Retry-After. Its store's cleaner is a goroutine with a ticker that
//     only a finalizer stops, so here it is configured off
//     (CleanUpInterval 0), which a synctest bubble needs.
//   - sethvargo/go-limiter (httplimit, IPKeyFunc): memorystore's bucket
//     gets all its tokens back at each interval's tick, counted from the
//     key's first request: a fixed window of Tokens per Interval aligned to
//     the first request, which in a run from the start is mock's aligned
//     window. X-RateLimit-Reset and Retry-After are the tick as an HTTP
//     date in time.RFC1123 ("... UTC", not "GMT"), whole seconds cut down.
//     memorystore reads the clock through a linkname to time.now, which a
//     synctest bubble does not fake (time.Now is runtimeNow), so here the
//     real httplimit middleware stands before tickStore, memorystore's
//     bucket transcribed onto time.Now; bench/gateway.sh runs memorystore
//     itself on the real clock.
//
// Cells: each at 20 a second (600 items) and 120 a minute (360 items),
// told (--rpm) and untold, 50 ms latency and -j 32; at 3 s latency, -j 64
// (21 a second in flight), for throttled and ulule; and, for the three
// whose resets are whole seconds cut down (httprate, ulule, go-limiter),
// 20 a second with the run starting 0.73 s into a second (foreignPhase). It runs with the
// zoo's other tests; LLMBATCH_ZOO_STRICT=1 asserts issue 10's figures.
//
//	LLMBATCH_ZOO_STRICT=1 LLMBATCH_ZOO_MD=/tmp/f.md go test ./llm -run TestZooForeign -count=1 -v
func TestZooForeign(t *testing.T) {
	table := zooTable(runCells(t, foreignCells()))
	t.Log("\n" + table)
	if path := os.Getenv("LLMBATCH_ZOO_MD"); path != "" {
		writeZooMD(t, table)
	}
}

// A foreignLib is one library: its name, the mock algorithm nearest to it
// for the limit of n per window, and its middleware for that limit.
type foreignLib struct {
	name  string
	ref   func(n int, window time.Duration) mock.Config
	front func(t *testing.T, n int, window time.Duration, next http.Handler) (http.Handler, func())
}

var foreignLibs = []foreignLib{
	{name: "httprate", ref: foreignRef(mock.LimiterSlidingCounter, 0, false), front: httprateFront},
	{name: "throttled", ref: foreignRef(mock.LimiterGCRA, throttledBurst, false), front: throttledFront},
	{name: "tollbooth", ref: tollboothRef, front: tollboothFront},
	{name: "ulule", ref: foreignRef(mock.LimiterWindow, 0, true), front: ululeFront},
	{name: "go-limiter", ref: foreignRef(mock.LimiterWindow, 0, false), front: goLimiterFront},
}

// throttledBurst is the MaxBurst of throttled's README.
const throttledBurst = 5

// foreignRef is the mock config of alg for n per window, with a burst of
// burst requests beyond the first and fixed windows from the first request
// when first.
func foreignRef(alg string, burst int, first bool) func(int, time.Duration) mock.Config {
	return func(n int, window time.Duration) mock.Config {
		cfg := mock.Config{Limiter: alg, RPM: n, Window: window, FirstWindows: first, Headers: mock.HeadersNone, Seed: 1}
		if burst > 0 {
			// mock takes int(Burst*n): a half over keeps the float's rounding off.
			cfg.Burst = (float64(burst) + 0.5) / float64(n)
		}
		return cfg
	}
}

// tollboothRef is x/time/rate at n per window as tollbooth counts it: per
// second, with a burst of a second's worth.
func tollboothRef(n int, window time.Duration) mock.Config {
	perSecond := int(int64(n) * int64(time.Second) / int64(window))
	return mock.Config{Limiter: mock.LimiterBucket, RPM: perSecond, Window: time.Second, Headers: mock.HeadersNone, Seed: 1}
}

func httprateFront(_ *testing.T, n int, window time.Duration, next http.Handler) (http.Handler, func()) {
	return httprate.LimitByIP(n, window)(next), func() {}
}

func throttledFront(t *testing.T, n int, window time.Duration, next http.Handler) (http.Handler, func()) {
	store, err := memstore.NewCtx(65536)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: throttled.PerDuration(n, window), MaxBurst: throttledBurst})
	if err != nil {
		t.Fatal(err)
	}
	h := throttled.HTTPRateLimiterCtx{RateLimiter: lim, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
	return h.RateLimit(next), func() {}
}

func tollboothFront(_ *testing.T, n int, window time.Duration, next http.Handler) (http.Handler, func()) {
	perSecond := float64(n) * float64(time.Second) / float64(window)
	return tollbooth.LimitHandler(tollbooth.NewLimiter(perSecond, nil), next), func() {}
}

func ululeFront(_ *testing.T, n int, window time.Duration, next http.Handler) (http.Handler, func()) {
	store := memory.NewStoreWithOptions(ulule.StoreOptions{Prefix: ulule.DefaultPrefix, CleanUpInterval: 0})
	lim := ulule.New(store, ulule.Rate{Period: window, Limit: int64(n)})
	return stdlib.NewMiddleware(lim).Handler(next), func() {}
}

func goLimiterFront(t *testing.T, n int, window time.Duration, next http.Handler) (http.Handler, func()) {
	mw, err := httplimit.NewMiddleware(&tickStore{tokens: uint64(n), interval: window, buckets: map[string]*tickBucket{}}, httplimit.IPKeyFunc())
	if err != nil {
		t.Fatal(err)
	}
	return mw.Handle(next), func() {}
}

// tickStore is go-limiter v0.7.1's memorystore (store.take, tick,
// availableTokens) on time.Now, for synctest: a key's bucket starts full at
// its first request and, at the first take in a later tick of interval
// since then, is full again (memorystore's fill rate is in tokens per
// nanosecond and any tick refills it whole).
type tickStore struct {
	tokens   uint64
	interval time.Duration
	mu       sync.Mutex
	buckets  map[string]*tickBucket
}

type tickBucket struct {
	start     time.Time
	available uint64
	lastTick  uint64
}

var _ limiter.Store = (*tickStore)(nil)

func (s *tickStore) Take(_ context.Context, key string) (tokens, remaining, reset uint64, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	b := s.buckets[key]
	if b == nil {
		b = &tickBucket{start: now, available: s.tokens}
		s.buckets[key] = b
	}
	tick := uint64(now.Sub(b.start) / s.interval)
	reset = uint64(b.start.Add(time.Duration(tick+1) * s.interval).UnixNano())
	if b.lastTick < tick {
		b.available, b.lastTick = s.tokens, tick
	}
	if b.available > 0 {
		b.available--
		return s.tokens, b.available, reset, true, nil
	}
	return s.tokens, 0, reset, false, nil
}

func (s *tickStore) Get(context.Context, string) (uint64, uint64, error)      { return 0, 0, nil }
func (s *tickStore) Set(context.Context, string, uint64, time.Duration) error { return nil }
func (s *tickStore) Burst(context.Context, string, uint64) error              { return nil }
func (s *tickStore) Close(context.Context) error                              { return nil }

// foreignCells are the foreign zoo's cells.
func foreignCells() []zooCell {
	var cells []zooCell
	for _, lib := range foreignLibs {
		for _, told := range []bool{true, false} {
			cells = append(cells,
				lib.cell(20, time.Second, 50*time.Millisecond, 32, zooRequests600(), told, 0),
				lib.cell(120, time.Minute, 50*time.Millisecond, 32, requestPrompts(360), told, 0))
			if lib.name == "throttled" || lib.name == "ulule" {
				cells = append(cells, lib.cell(20, time.Second, 3*time.Second, 64, zooRequests600(), told, 0))
			}
			if lib.name == "httprate" || lib.name == "ulule" || lib.name == "go-limiter" {
				cells = append(cells, lib.cell(20, time.Second, 50*time.Millisecond, 32, zooRequests600(), told, foreignPhase))
			}
		}
	}
	return cells
}

// foreignPhase is how far into a second the phase cells start: the
// synctest clock starts on a whole second, where a reset cut down to its
// second is exact; a real clock is anywhere in one.
const foreignPhase = 730 * time.Millisecond

// cell is the library at n per window; with a phase, the limiter is made
// and the run starts that far into the fake clock's first second.
func (l foreignLib) cell(n int, window, latency time.Duration, workers int, prompts []string, told bool, phase time.Duration) zooCell {
	cfg := l.ref(n, window)
	cfg.Latency = latency
	group := fmt.Sprintf("foreign-%dper%v", n, window)
	if workers != 32 {
		group += fmt.Sprintf("-j%d", workers)
	}
	if phase > 0 {
		group += fmt.Sprintf("-at%v", phase)
	}
	return zooCell{group: group, mock: cfg, told: told, prompts: prompts, workers: workers, lib: l.name,
		front: func(t *testing.T, next http.Handler) (http.Handler, func()) {
			time.Sleep(phase) // runZoo starts its clock after the front is made
			return l.front(t, n, window, next)
		}}
}

// TestHttprateMinute: go-chi/httprate's sliding counter of 120 a minute,
// whose X-RateLimit-Reset is its current window's end and whose
// Retry-After is the window's length, told the limit and told nothing.
// Taken for a fixed window, the lane read it all but spent after each
// window's end and held a minute, and the refusal there paused it a
// minute besides: 1.35x and 1.68x the reference. Taken for a counter (see
// pace's window.carries), the first refusals at the first end cost only
// their own requests their minute (where the second of two sent at once
// paused the lane, one run in three took 1.33x). Its windows start at the
// limiter's first instant, and its reset is their end cut down to a whole
// second: started 0.4 s or 50.1 s into a second (as on any real clock),
// the lane read each end up to a second early, sent into a window still
// full, and was held its minute (told 1.06x and 1.33x, untold 1.65x and
// 1.36x), until a reset naming a whole second was read as that second's
// end (see pace's widened).
func TestHttprateMinute(t *testing.T) {
	var cells []zooCell
	for _, phase := range []time.Duration{0, 400 * time.Millisecond, 50100 * time.Millisecond} {
		for _, told := range []bool{true, false} {
			cells = append(cells, foreignLibs[0].cell(120, time.Minute, 50*time.Millisecond, 32, requestPrompts(360), told, phase))
		}
	}
	for _, c := range cells {
		r := runZoo(t, c)
		t.Logf("%s: %v, %.2fx the reference, %.1f%% refused", c.name(), r.wall, r.ratio(), 100*r.refusedShare())
		if r.ratio() > 1.1 || r.answered != len(c.prompts) || r.refusedShare() > 0.02 {
			t.Errorf("%s: %.2fx the reference, %.1f%% refused, %d of %d answered; want at most 1.1x and 2%%, all",
				c.name(), r.ratio(), 100*r.refusedShare(), r.answered, len(c.prompts))
		}
	}
}

// TestGoLimiterSecondsFromArrival: sethvargo/go-limiter's 20 a second,
// its windows on whole seconds of the clock, told as HTTP dates of their
// ends (exact there), answered in 50 ms, told nothing. Its resets counted
// from the send, each end a latency early, the lane sent each second's
// first request into the second before: 2.1-4.2% of a run refused. Once a
// refusal at the end so counted and an admission at the second named show
// the window ends there, its resets are counted from the arrival (see
// pace's namedSecond): 0.8-1.2%.
func TestGoLimiterSecondsFromArrival(t *testing.T) {
	c := foreignLibs[4].cell(20, time.Second, 50*time.Millisecond, 32, zooRequests600(), false, 0)
	r := runZoo(t, c)
	t.Logf("%s: %v, %.2fx the reference, %.1f%% refused", c.name(), r.wall, r.ratio(), 100*r.refusedShare())
	if r.ratio() > 1.1 || r.answered != len(c.prompts) || r.refusedShare() > 0.017 {
		t.Errorf("%s: %.2fx the reference, %.1f%% refused, %d of %d answered; want at most 1.1x and 1.7%%, all",
			c.name(), r.ratio(), 100*r.refusedShare(), r.answered, len(c.prompts))
	}
}
