package mock

import (
	"math"
	"time"
)

// eps is the slack of the buckets' comparisons, in units: their levels are
// floating point, and a client coming back when told must not be refused for
// a rounding error.
const eps = 1e-6

// tokenBucket holds up to limit units, starts full and refills continuously
// at limit per window. A request takes its cost; one costing more than the
// bucket goes from a full bucket and empties it.
type tokenBucket struct {
	limit  int
	window time.Duration
	level  float64
	at     time.Time // when level was last brought up to date; zero: full
}

func newTokenBucket(c meterConfig) *tokenBucket {
	return &tokenBucket{limit: c.limit, window: c.window, level: float64(c.limit)}
}

// refill brings level up to date at now.
func (b *tokenBucket) refill(now time.Time) {
	if !b.at.IsZero() {
		part := float64(now.Sub(b.at)) / float64(b.window)
		b.level = min(float64(b.limit), b.level+part*float64(b.limit))
	}
	b.at = now
}

func (b *tokenBucket) fits(now time.Time, cost int) (bool, time.Duration) {
	b.refill(now)
	need := min(float64(cost), float64(b.limit))
	if b.level >= need-eps {
		return true, 0
	}
	return false, durationFor(need-b.level, b.limit, b.window)
}

func (b *tokenBucket) take(now time.Time, cost int) {
	b.refill(now)
	b.level = max(b.level-float64(cost), 0)
}

func (b *tokenBucket) refuse(time.Time, int) {}
func (b *tokenBucket) finish(int)            {}

// state's reset is the time until the bucket is full again.
func (b *tokenBucket) state(now time.Time) state {
	b.refill(now)
	return state{limit: b.limit, remaining: int(b.level), window: b.window,
		reset: durationFor(float64(b.limit)-b.level, b.limit, b.window)}
}

// leakyBucket is a bucket of capacity 1+burst that each admitted request
// fills by its cost and that drains at limit per window; a request that
// would overflow it is refused at once, as nginx's limit_req with burst and
// nodelay does (nothing is queued). One costing more than the capacity is
// admitted into an empty bucket.
type leakyBucket struct {
	limit    int
	window   time.Duration
	capacity float64
	level    float64
	at       time.Time
}

func newLeaky(c meterConfig) *leakyBucket {
	return &leakyBucket{limit: c.limit, window: c.window, capacity: float64(1 + c.burst)}
}

// drain brings level down to date at now.
func (b *leakyBucket) drain(now time.Time) {
	if !b.at.IsZero() {
		part := float64(now.Sub(b.at)) / float64(b.window)
		b.level = max(b.level-part*float64(b.limit), 0)
	}
	b.at = now
}

func (b *leakyBucket) fits(now time.Time, cost int) (bool, time.Duration) {
	b.drain(now)
	c := float64(cost)
	switch {
	case b.level+c <= b.capacity+eps || b.level <= eps:
		return true, 0
	case c > b.capacity: // oversized: wait until empty
		return false, durationFor(b.level, b.limit, b.window)
	default:
		return false, durationFor(b.level+c-b.capacity, b.limit, b.window)
	}
}

func (b *leakyBucket) take(now time.Time, cost int) { b.drain(now); b.level += float64(cost) }
func (b *leakyBucket) refuse(time.Time, int)        {}
func (b *leakyBucket) finish(int)                   {}

// state tells the rate (limit per window), the room left in the bucket,
// and, as reset, the time until it is empty.
func (b *leakyBucket) state(now time.Time) state {
	b.drain(now)
	return state{limit: b.limit, remaining: int(math.Max(b.capacity-b.level, 0)), window: b.window,
		reset: durationFor(b.level, b.limit, b.window)}
}

// gcra is the generic cell rate algorithm: each unit moves a theoretical
// arrival time (tat) on by window/limit, and a request is admitted when the
// tat it would leave is at most 1+burst units ahead of now. It admits what
// a leaky bucket of that capacity does, with no level to drain.
type gcra struct {
	limit     int
	window    time.Duration
	interval  float64 // nanoseconds per unit
	tolerance float64 // nanoseconds: (1+burst) units
	tat       time.Time
}

func newGCRA(c meterConfig) *gcra {
	t := float64(c.window) / float64(c.limit)
	return &gcra{limit: c.limit, window: c.window, interval: t, tolerance: float64(1+c.burst) * t}
}

// ahead is how far the tat is ahead of now, in nanoseconds, at least 0.
func (g *gcra) ahead(now time.Time) float64 {
	return max(float64(g.tat.Sub(now)), 0)
}

func (g *gcra) fits(now time.Time, cost int) (bool, time.Duration) {
	a, need := g.ahead(now), float64(cost)*g.interval
	switch {
	case a+need <= g.tolerance+1 || a == 0: // a nanosecond of slack for the rounding of tat
		return true, 0
	case need > g.tolerance: // oversized: wait until the tat is now
		return false, time.Duration(a)
	default:
		return false, time.Duration(math.Ceil(a + need - g.tolerance))
	}
}

func (g *gcra) take(now time.Time, cost int) {
	g.tat = now.Add(time.Duration(g.ahead(now) + float64(cost)*g.interval))
}

func (g *gcra) refuse(time.Time, int) {}
func (g *gcra) finish(int)            {}

// state tells the rate, the units that would still be admitted now, and,
// as reset, the time until the tat is now (all room back).
func (g *gcra) state(now time.Time) state {
	a := g.ahead(now)
	return state{limit: g.limit, remaining: int(max((g.tolerance-a)/g.interval, 0) + 1e-9), window: g.window,
		reset: time.Duration(a)}
}
