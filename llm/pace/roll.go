package pace

import "time"

// A window's roll, its resets in whole seconds. A fixed window that starts
// at the client's first request and tells its end as a Unix second cut
// down (ulule's) names a second up to a whole second before it ends: the
// tracker took it for the end, and at it sent a window's worth at once
// into a window still spent (19 refused in one run of 600 on the real
// clock; 0.8-5.4% in eight runs, by where in a second the run began). So
// at a reset in whole seconds only one request goes first; the rest follow
// once it has not been refused for twice a refusal's round trip (refusals
// come back at once: 1-2 ms on loopback), which costs the window's first
// sends that much and no room. A refusal moves the reset on (see
// named.go). Only once a refusal has been seen (before, nothing says the
// reset is off, and the trip is not known), and of requests only: a
// token window's roll is the request's.

// rollHold reports whether a request that fits the window at now, the
// lane's count at count, is held at a roll, and for how long: a reset in
// whole seconds (or naming one of the clock) passed, and the request that
// went first at it or after is too recent to be known taken.
func (w *window) rollHold(now time.Time, count float64) (time.Duration, bool) {
	coarse := !w.fine || !w.named.end.IsZero()
	if !coarse || w.limit <= 0 || w.refill > 0 || w.counting() || w.trip <= 0 || w.reset.IsZero() || now.Before(w.reset) {
		return 0, false
	}
	from := w.reset.Add(-time.Nanosecond) // sends at the reset itself are after it
	t, ok := w.log.after(from)
	if !ok || count < w.log.countAt(from)+1 {
		return 0, false // none has gone yet: the first may
	}
	if d := t.Add(w.rollWait()).Sub(now); d > 0 {
		return max(d, time.Millisecond), true
	}
	return 0, false
}

// rollWait is how long the first request at a roll goes before the rest:
// twice a refusal's round trip, a tenth of the window's period at most (a
// slow refusal through a queueing proxy would hold each roll seconds).
func (w *window) rollWait() time.Duration {
	return min(2*w.trip, w.period/10) + bunchGap
}
