package pace

import "time"

// slowStart is the concurrency a lane with no told rate starts at; it
// doubles every slowStep until the first refusal, so the first burst the
// server refuses is a handful of requests, not all the workers.
const (
	slowStart = 4
	slowStep  = 250 * time.Millisecond
)

// concurrency is the policy of the lane's gate: how many requests may be
// in flight. Untold, it starts slow and doubles with time until the first
// refusal; then it is the configured most, unless the server shows a
// concurrency cap: refusals at a rate that was admitted before, of requests
// sent with more in flight than any admitted one. Then the limit is the
// most admitted in flight, probed one higher every maxPatience/2 spans.
// Pure: time is passed in; the lane owns it.
type concurrency struct {
	most    int       // the configured limit; 0: none
	slow    time.Time // when the slow start began; zero: over
	cap     int       // the learned cap; 0: none
	maxOK   int       // the most in flight, counting it, at the send of a request admitted since the cap was last set
	since   time.Time // when the cap was last set or probed
	blocked bool      // a request waited for the gate since
}

func newConcurrency(most int, slow bool, now time.Time) concurrency {
	c := concurrency{most: most}
	if slow {
		c.slow = now
	}
	return c
}

// limit returns how many may be in flight at now; 0: no limit.
func (c *concurrency) limit(now time.Time) int {
	n := c.most
	if c.cap > 0 && (n == 0 || c.cap < n) {
		n = c.cap
	}
	if !c.slow.IsZero() {
		k := min(now.Sub(c.slow)/slowStep, 16)
		s := slowStart << k
		if n > 0 && s >= n || k >= 16 {
			c.slow = time.Time{}
		} else {
			n = s
		}
	}
	return n
}

// admitted notes a request admitted that was sent with inFlight in flight.
func (c *concurrency) admitted(inFlight int) { c.maxOK = max(c.maxOK, inFlight) }

// refused handles a refusal of a request sent with inFlight in flight, and
// reports whether it shows a concurrency cap rather than a rate limit:
// the rate it was sent at, sentRate, had been held without refusal (good)
// and more were in flight than in any admitted request.
func (c *concurrency) refused(now time.Time, inFlight int, sentRate, good float64) bool {
	c.slow = time.Time{}
	if good <= 0 || sentRate > good || c.maxOK <= 0 || inFlight <= c.maxOK {
		return false
	}
	c.cap, c.since, c.blocked = c.maxOK, now, false
	return true
}

// tick probes a learned cap one higher when the gate held requests back
// for maxPatience/2 spans without a concurrency refusal.
func (c *concurrency) tick(now time.Time, span time.Duration) {
	if c.cap == 0 || now.Sub(c.since) < maxPatience/2*span {
		return
	}
	if c.blocked {
		c.cap++
	}
	c.since, c.blocked = now, false
}
