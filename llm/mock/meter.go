package mock

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The rate-limit algorithms a [Handler] can play, as named by
// [Config.Limiter]. Each counts a limit of L requests (RPM) or tokens (TPM)
// per Window; "rate" below is L/Window.
const (
	// LimiterWindow is a fixed window: L per window, the windows aligned
	// to the handler's start (Kong, the mock's default), or with
	// [Config.FirstWindows] each starting at the first request after the
	// last one ended (express-rate-limit, rate-limiter-flexible).
	LimiterWindow = "window"
	// LimiterBucket is a token bucket holding L, starting full and
	// refilling continuously at rate, as OpenAI's limits do.
	LimiterBucket = "bucket"
	// LimiterLeaky is a leaky bucket that refuses at once when full, as
	// nginx's limit_req with burst and nodelay does: 1 plus Burst×L at
	// once, then rate.
	LimiterLeaky = "leaky"
	// LimiterSlidingLog counts what was admitted in the last Window, each
	// request remembered with its time.
	LimiterSlidingLog = "sliding-log"
	// LimiterSlidingCounter estimates the last Window from two fixed
	// windows, the previous one weighted by how much of it is still
	// inside the sliding one (Cloudflare's, NGINX Plus's kind), and counts
	// refused requests too: a client that keeps pushing stays locked out.
	LimiterSlidingCounter = "sliding-counter"
	// LimiterGCRA is the generic cell rate algorithm (redis-cell,
	// throttled): a theoretical arrival time moved on by Window/L per
	// unit, with a tolerance of 1 plus Burst×L units.
	LimiterGCRA = "gcra"
	// LimiterConcurrency limits only requests in flight, to
	// [Config.InFlight], answering 429 beyond; RPM and TPM are not counted.
	LimiterConcurrency = "concurrency"
	// LimiterPenalty is a fixed window that, once it has refused a
	// request, refuses every request for [Config.Penalty].
	LimiterPenalty = "penalty"
)

// limiterNames lists the algorithms in the order of their doc, for messages.
var limiterNames = []string{LimiterWindow, LimiterBucket, LimiterLeaky, LimiterSlidingLog,
	LimiterSlidingCounter, LimiterGCRA, LimiterConcurrency, LimiterPenalty}

// A meter counts one limit, requests or tokens, by one algorithm. Times are
// passed in, so each algorithm is a pure state machine tested as a table;
// the [Handler]'s mutex guards it. A request's cost is 1 for a request
// meter and its token estimate for a token meter.
//
// For every meter, a request costing more than the whole limit is admitted
// when nothing else is counted (an empty window, a full bucket), so that it
// is not refused for ever.
type meter interface {
	// fits reports whether cost may be admitted at now and, when not, how
	// long until it could be if nothing else came.
	fits(now time.Time, cost int) (bool, time.Duration)
	take(now time.Time, cost int)   // counts an admitted request
	refuse(now time.Time, cost int) // notes a refused one; most meters ignore it
	finish(cost int)                // an admitted request has been answered (only the concurrency cap cares)
	state(now time.Time) state      // what the headers say
}

// state is what a meter tells in headers: its limit, what is left, and how
// long until all of it is back (the window's end; for a refilling bucket,
// the time until it is full).
type state struct {
	limit     int
	remaining int
	reset     time.Duration
	window    time.Duration // the window the limit is counted over; 0 for a concurrency cap
}

// admit is the whole decision of one meter: fits, then take, or refuse and
// the wait once the refusal is counted (see [limits.decide]).
func admit(m meter, now time.Time, cost int) (bool, time.Duration) {
	if ok, _ := m.fits(now, cost); ok {
		m.take(now, cost)
		return true, 0
	}
	m.refuse(now, cost)
	_, retry := m.fits(now, cost)
	return false, retry
}

// meterConfig is what every meter is built from.
type meterConfig struct {
	limit   int           // L, > 0
	window  time.Duration // > 0
	start   time.Time     // fixed windows are aligned to it
	first   bool          // window, penalty: windows start at a request instead (see Config.FirstWindows)
	burst   int           // leaky, gcra: units allowed at once beyond the first
	penalty time.Duration // penalty: how long to refuse after a refusal
}

// newMeter returns the meter of the named rate algorithm (not the
// concurrency cap, which counts no rate).
func newMeter(name string, c meterConfig) meter {
	switch name {
	case LimiterBucket:
		return newTokenBucket(c)
	case LimiterLeaky:
		return newLeaky(c)
	case LimiterSlidingLog:
		return &slidingLog{limit: c.limit, window: c.window}
	case LimiterSlidingCounter:
		return &slidingCounter{fixedWindow: fixedWindow{limit: c.limit, window: c.window, start: c.start}}
	case LimiterGCRA:
		return newGCRA(c)
	case LimiterPenalty:
		return &penaltyBox{inner: &fixedWindow{limit: c.limit, window: c.window, start: c.start, first: c.first}, penalty: c.penalty}
	default:
		return &fixedWindow{limit: c.limit, window: c.window, start: c.start, first: c.first}
	}
}

// checkLimiter returns an error unless name is an algorithm's name or "".
func checkLimiter(name string) error {
	if name == "" {
		return nil
	}
	for _, n := range limiterNames {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("mock: unknown limiter %q: want one of %s", name, strings.Join(limiterNames, ", "))
}

// durationFor is how long a rate of limit per window takes to make up n,
// rounded up to the nanosecond so that a client coming back when told is
// not refused by a rounding error.
func durationFor(n float64, limit int, window time.Duration) time.Duration {
	if limit <= 0 || n <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(n / float64(limit) * float64(window)))
}
