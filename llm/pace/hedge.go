package pace

import "time"

// A hedge: a cut under what the server admitted out of its holds, to the
// rate over them (see bracket). A run of refusals with nothing taken,
// after a window's worth, is as likely a longer window's wall as a ban:
// the cut takes the window's rate. A pace over that rate which the
// server keeps up for longer than such a window allows shows it was a
// ban, and the pace goes back to what the cut would have been without
// the hedge.
type hedge struct {
	rate   float64       // the rate over the holds, the window's if it was one; 0: no hedge
	window time.Duration // how long that window would be: the epoch refused, holds and all
	back   float64       // the cut without the hedge: under the rate refused, and what was admitted out of the holds
}

// hedged notes the cut of a refusal at sentRate, in an epoch that lasted
// d, to a measure of rate over its holds, and open out of them. Where the
// two are the same, there is no hedge.
func (e *estimator) hedged(rate, open, sentRate float64, d time.Duration) {
	if open > rate {
		e.hedge = hedge{rate: rate, window: d, back: min(cutLeast*sentRate, cutTo*open)}
	}
}

// unhedged returns the pace the hedge's cut would have been, once the
// epoch now, at a pace over the hedge's rate, has admitted more than a
// window that long at that rate lets through in its time (its windows,
// one more for the edges); and drops the hedge. (Held at 677/min after a
// hedge of 402/min, at a 2 s ban of 20 a 1.01 s window, each step up
// waited 25 s to be worth a ban: 1.52-1.6x.)
func (e *estimator) unhedged(now time.Time) (float64, bool) {
	h := e.hedge
	if h.rate == 0 || e.rate <= h.rate || h.back <= e.rate {
		return 0, false
	}
	held := now.Sub(e.ep.start) - e.ep.held
	if e.ep.admitted <= h.rate*(held+h.window).Seconds() {
		return 0, false
	}
	e.hedge = hedge{}
	return h.back, true
}
