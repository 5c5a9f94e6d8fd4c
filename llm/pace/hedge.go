package pace

import "time"

// A hedge: a cut under what the server admitted out of its holds, to the
// rate over them (see bracket). A run of refusals with nothing taken,
// after a window's worth, is as likely a longer window's wall as a ban:
// the cut takes the window's rate (see windowRate). A pace over that rate
// which the server keeps up for longer than such a window allows shows it
// was a ban, and the pace goes back to what the cut would have been
// without the hedge; one refused sooner shows it was the window (see
// confirmed).
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

// windowRate is the rate r of a window as long as the epoch refused (d),
// as the hedge takes it, or more where the lane's history shows that
// window shorter: it holds what the server took before its first
// refusal (its burst), and no stretch of the lane's answers longer than
// it holds more than that. (A sliding log of 100 a 5 s, sent 100 a
// second once it reopened, took nothing for 4 s after; the epoch refused
// at 25 a second after it took 100 in 8.6 s, and the hedge cut to 11 a
// second, where any 5.2 s held no more than 100.)
func (e *estimator) windowRate(r float64, d time.Duration, at time.Time) float64 {
	b := e.full.burst
	if b <= 0 {
		return r
	}
	if w := e.long.got.longest(b, d, at); w >= minSpan {
		if b/w.Seconds() > r {
			e.window = w
		}
		return max(r, b/w.Seconds())
	}
	return r
}

// confirmed bounds the cut of a refusal at a pace over the rate of the
// hedge it was sent under, in an epoch that admitted no more than a window
// at that rate lets through (see unhedged): the window the hedge took as
// likely as a ban is the server's, since a ban's window would have let the
// pace through, and the cut goes a little under the window's rate, not a
// tenth under the probe. (A fixed window of 40 a 2 s, climbing from 1140/min
// towards 2400/min, was refused at 1654/min and cut to 1489/min, then
// 1340/min, refused each time.)
func (e *estimator) confirmed(cut pending, next float64) float64 {
	h := cut.hedge
	if h.rate == 0 || cut.sentRate <= h.rate {
		return next
	}
	if held := cut.at.Sub(e.ep.start) - e.ep.held; e.ep.admitted > h.rate*(held+h.window).Seconds() {
		return next
	}
	return min(next, max(cutTo*h.rate, cutDeep*cut.sentRate))
}

// windowEnd is the end of a hold at a wall until at, or sooner where the
// window the lane's answers show (see windowRate) has room again by then:
// what the lane got in it back from now is under the burst by a request of
// n. (Cut to 1140/min under a sliding log of 100 a 5 s, the first send was
// refused 0.5 s before the log's oldest went, and the wall held the lane a
// span, 2.4 s.)
func (e *estimator) windowEnd(now, at time.Time, n float64) time.Time {
	if e.window == 0 {
		return at
	}
	if t, ok := e.long.got.room(e.full.burst-n, e.window, now); ok && t.After(now) && t.Before(at) {
		return t
	}
	return at
}
