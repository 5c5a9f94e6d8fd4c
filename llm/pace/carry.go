package pace

import (
	"math"
	"time"
)

// carries reports whether r, the reading of a request sent at sentAt when
// the lane's count was seq, shows the window to be a sliding counter whose
// resets are the end of its current fixed window (go-chi/httprate's
// X-RateLimit-Reset), and its length. Such resets stand through a window
// and move on by its length once reached, as a fixed window's do (see
// stand), but the new window's readings count the one before, weighed by
// the share of its length still to go: more than the lane sent since the
// end, by about what it sent in the window before times that share. A
// fixed window's count starts from nothing (or from what others sent since
// its end, which the lane's own window before does not foretell).
// Taken for a fixed window, httprate's minute, told 120 and filled in its
// first second, read all but spent after its end and held the lane for a
// minute at each end, its Retry-After (the window's length) besides
// (1.35x the reference; told nothing, 1.68x).
func (w *window) carries(r Reading, sentAt time.Time, seq float64) (time.Duration, bool) {
	if !r.Told || r.Reset <= 0 || w.limit <= 0 || w.ctr.length > 0 || w.reset.IsZero() || w.many {
		return 0, false
	}
	end := w.reset.Add(-w.guard()) // the end held, as the server told it
	d := sentAt.Add(r.Reset).Sub(end)
	if sentAt.Before(end.Add(-slack(r))) || d < 20*time.Second || 4*sentAt.Sub(end) > d {
		return 0, false // not early in a long window after the end held
	}
	atEnd := w.log.countAt(end.Add(-1))                     // the sends at the end go in the new window
	before := atEnd - w.log.countAt(end.Add(-d-slack(r)-1)) // a widened end lies a second late (see widened)
	into := min(max(sentAt.Sub(end), 0).Seconds()/d.Seconds(), 1)
	want := before * (1 - into)
	carry := float64(max(w.limit, r.Limit)-r.Left) - (seq - atEnd)
	if want < max(2, float64(w.limit)/4) || 2*carry < want || carry > 1.5*want+2 {
		return 0, false
	}
	if r := d.Round(time.Second); (d - r).Abs() <= 2*w.guard() {
		d = r // a window of whole seconds, its end told a way to the server late
	}
	return d, true
}

// carried takes the window for a counter where r shows it to be one (see
// carries).
func (w *window) carried(r Reading, sentAt time.Time, seq float64) {
	if d, ok := w.carries(r, sentAt, seq); ok {
		w.ctr.length, w.ctr.carried, w.wall, w.refill = d, true, false, 0
	}
}

// pauseHint is what of a refusal's hint, of a window read r, the lane's
// pause heeds: none where the hint is coarse (see coarse; with no search
// there is no hold of the estimator's to pause for instead). Where r
// shows the window to be a counter whose window before weighs off, or
// another reading has (see carries: carried), the lane does not pause at
// all: httprate's Retry-After is its window's length, a minute, though
// room comes back from its first second; the tracker holds the others to
// what the counter has left, and the request refused waits its hint.
// (Paused for it, or for the estimator's hold, a whole span with no pace
// yet after the opening, a run lost a minute at the first end.)
func (q *quantity) pauseHint(p *Permit, o Outcome, r Reading) (hint time.Duration, carried bool) {
	seq := p.seqReq
	if o.Tokens {
		seq = p.seqTok
	}
	if _, ok := q.win.carries(r, p.sent, seq); ok || q.win.ctr.carried {
		return 0, true
	}
	if coarse(o.Hint) && !o.FineHint && q.est.adapt && (q.est.good > 0 || !math.IsInf(q.est.ceil, 1)) {
		return 0, false
	}
	return o.Hint, false
}
