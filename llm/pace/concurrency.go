package pace

import "time"

// slowStart is the concurrency a lane with no told rate starts at; it
// doubles every slowStep until the first refusal, so the first burst the
// server refuses is a handful of requests, not all the workers.
const (
	slowStart = 4
	slowStep  = 250 * time.Millisecond
)

// The search of a concurrency cap: the refusals that show one, and how
// rarely a cap found is probed one higher (in spans of the request pace,
// doubling with each probe refused).
const (
	capEvidence      = 2 // instants at which refusals went, and admitted requests after, that show a cap
	capFirstPatience = 2 // a rate limit taken for a cap shows at the first probe (see shut)
	capMaxPatience   = 64
)

// concurrency is the policy of the lane's gate: how many requests may be
// in flight. Untold, it starts slow and doubles with time until the first
// refusal; then it is the configured most, unless the server shows a
// concurrency cap.
//
// A cap is told from a rate limit by what the refusals go with. The flight
// log knows for each request, once everything sent before it (or at the
// same instant) has been answered, how many admitted requests were in
// flight when it went: what the server had in hand when it came (its busy
// count). A server with a cap of K admits a request that finds fewer than
// K in hand and refuses one that finds K, whatever the rate; a rate limit
// refuses by the rate, whatever is in hand. So a cap shows as refusals, at
// two instants at least (not one burst), most of which found more in hand
// than any admitted request did, and one at least; and as admitted
// requests sent after the first of them (a rate limit whose admitted
// requests are all still in flight looks like a cap of what it admitted,
// until it admits more). Refusals with none in hand, or fewer than an
// admitted request found, beyond a quarter of them, show a rate limit and
// drop a cap found. The cap is what most refusals found; a refusal under
// it lowers it at once to the most it may have found, and the gate probes
// one higher after patience spans in which it held requests back, the
// probe's slot open only between sends (see shut), the patience doubling
// with each probe refused. Refusals at the cap teach the
// pace nothing and pause no one (see lane.refused).
//
// Pure: time is passed in; the lane owns it.
type concurrency struct {
	most     int           // the configured limit; 0: none
	slow     time.Time     // when the slow start began; zero: over
	cap      int           // the cap found; 0: none
	since    time.Time     // when the cap was last set or probed
	patience int           // spans between probes
	probing  bool          // the cap is a probe one over the last found
	gap      time.Duration // while probing, how long after a send the probe's slot stays shut (see shut)
	blocked  bool          // a request waited for the gate since
	log      flights
}

func newConcurrency(most int, slow bool, now time.Time) concurrency {
	c := concurrency{most: most, patience: capFirstPatience}
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
		if c.shut(now) > 0 {
			n--
		}
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

// shut returns how long the probe's slot stays shut after the last send;
// 0: open, or no probe.
//
// A probe goes spaced, not beside another send: at the instant a slot was
// freed, the probe and the request that takes that slot would go together,
// and a rate limit with no burst (nginx's limit_req by default) refuses
// one of two sent at once with the other in hand, just as a cap would.
// Half the spacing of the sends at the cap, after the last send, a cap
// still finds its K in hand and refuses the probe, while a rate limit the
// cap held under admits it with K in hand, which shows it is no cap (see
// judge). (Taken for a cap of 1, nginx's 10 a second answered in 200 ms
// refused every probe of 2 sent at once, and the run took 2-4x.)
func (c *concurrency) shut(now time.Time) time.Duration {
	if !c.probing || c.gap <= 0 {
		return 0
	}
	return max(c.log.last().Add(c.gap).Sub(now), 0)
}

// sent logs a request sent at now and returns its number in the log.
func (c *concurrency) sent(now time.Time) int64 { return c.log.send(now) }

// answered logs how request seq went (at now), and judges every request
// whose busy count is now known. It reports whether a cap was shown just
// now: the refusals before taught the pace what they should not have.
func (c *concurrency) answered(now time.Time, seq int64, st flightState) (found bool) {
	if st == refusedIt {
		c.slow = time.Time{}
	}
	c.log.answer(seq, now, st)
	c.log.ripen(now, func(f *flight) {
		found = c.judge(now, f) || found
	})
	return found
}

// judge weighs the evidence once f's busy count is known, and reports
// whether it shows a cap not known before: refusals sent at capEvidence
// instants at least (not one burst), and as many admitted requests sent
// after the first of them (a rate limit that
// has admitted requests which are all still in flight looks like a cap of
// what it admitted until more are admitted), none of which contradict one.
func (c *concurrency) judge(now time.Time, f *flight) bool {
	ev := c.log.evidence()
	switch {
	case !ev.consistent():
		c.cap, c.probing = 0, false // a rate limit: the cap was a mistake
	case c.cap > 0 && f.state == refusedIt && f.busy >= ev.hi-1:
		c.lower(now, f.busy)
	case c.cap == 0 && ev.bursts >= capEvidence && ev.after >= capEvidence:
		c.cap, c.since, c.probing, c.blocked = ev.hi, now, false, false
		return true
	}
	return false
}

// claim reports whether a refusal of request seq is the cap's, not a
// rate limit's, by the most it can have found in the server's hands: the
// requests sent no later than it that were in flight or admitted after
// it went. Such a refusal lowers the cap to that at once (a probe refused
// makes the next one wait longer); its busy count, once known, may lower
// it further (see judge). With no cap known, none is claimed: until its
// count is known, a refusal is taken for a rate limit's. Nor is one that
// can have found no more than an admitted request did (evidence.lo less
// one): a cap that admitted one with so many in hand is higher, and the
// refusal is a rate's (a bucket of a request each 200 ms, answered 300 ms
// late, so lowered a cap it seemed to show from 2 to 1).
func (c *concurrency) claim(now time.Time, seq int64) bool {
	if c.cap == 0 {
		return false
	}
	busy := c.log.inHand(seq)
	if busy == 0 || busy < c.log.evidence().lo {
		return false
	}
	c.lower(now, busy)
	return true
}

// lower makes the cap n if that is lower.
func (c *concurrency) lower(now time.Time, n int) {
	if n >= c.cap {
		return
	}
	c.cap, c.since = n, now
	if c.probing {
		c.patience = min(2*c.patience, capMaxPatience)
	}
	c.probing = false
}

// tick probes a cap one higher when the gate held requests back for
// patience spans without a refusal that lowered it, and reports whether
// it did.
func (c *concurrency) tick(now time.Time, span time.Duration) bool {
	if c.cap == 0 || now.Sub(c.since) < time.Duration(c.patience)*span {
		return false
	}
	if c.probing {
		c.patience = capFirstPatience // the last probe held: the cap rose
	}
	c.probing = c.blocked
	if c.blocked {
		c.gap = c.log.roundTrip() / time.Duration(2*c.cap)
		c.cap++
	}
	probe := c.blocked
	c.since, c.blocked = now, false
	return probe
}
