package pace

import "time"

// A told bucket. The margin keeps a told pace a little under the limit
// so that a server counting windows the lane cannot see never counts one
// too many (see Limiter.ceiling). A bucket whose headers tell its level
// and its time to full (OpenAI's) is seen: the tracker follows its level
// as it refills (see window.level), and lets a request go only into what
// the bucket holds. Held to the told rate less the margin, from a
// limiter starting empty, the lane then ran slower told than told
// nothing: a bucket of 10,000 tokens a second, 1.04x the time the limit
// allows told, 0.97x untold, where the tracker alone took the bucket's
// first fill and its whole refill. So once the headers show the told
// window to be a bucket refilling at the told rate, the pace the
// estimator leaves at its ceiling is the told rate itself, and the
// rate.Limiter holds the bucket's size, full once (see sync): it keeps to
// the limit the user told, the tracker to what the bucket holds. A
// refusal cuts the pace as ever, under the ceiling, and the lift is gone
// until the estimator climbs back to it. A bucket refilling faster than
// told is not the told window (the told limit may be the user's share of
// it), nor one that refills much slower: the tracker binds there anyway.

// toldBucket reports whether the server's headers show the told window
// to be a bucket the tracker follows: refilling within a tenth of the
// told rate, its size known, and the only window of its unit told.
func (q *quantity) toldBucket() bool {
	w := &q.win
	return w.told > 0 && w.refill > 0 && w.limit > 0 && !w.many && w.ctr.length == 0 && !w.wall &&
		10*w.refill >= 9*w.told && 10*w.refill <= 11*w.told
}

// lifted is the estimator's pace r, lifted to the told rate where it is
// at its ceiling and the told window is a bucket (see above).
func (q *quantity) lifted(r float64) float64 {
	if q.toldBucket() && r >= q.est.ceil {
		return max(r, q.win.told)
	}
	return r
}

// followed is the worth q's rate.Limiter holds, at the pace r, where the
// tracker follows the told window: a bucket's size, or a long window's
// worth (see toldWindow); false where it does not.
func (q *quantity) followed(r float64) (worth int, ok bool) {
	if q.toldBucket() {
		return q.win.limit, true
	}
	if l, ok := q.toldWindow(); ok {
		return int(r * l.Seconds()), true
	}
	return 0, false
}

// inStep reports whether r keeps in step with the bucket the window has
// been found to be (see judge): its reset, within the resets' resolution,
// the time to refill what it has used. A bucket's time to full stands
// while nothing is taken and moves on by what a request takes, so a lane
// that sends a long prompt, then a few short ones, then nothing while the
// prompt's debt is paid (a told pace just under the bucket's refill) sees
// it stand and move on alike, by about a long prompt's worth each time: a
// counter's moves, or, the bucket full when one goes, a wall's. So taken,
// a told token bucket of a second was followed as a counter of a quarter
// second for the rest of the run, the pace held to what that model left:
// one run in three took 1.06-1.17x the reference, where the told pace
// takes 1.04x. A reading in step is a bucket's: it tells no other kind's
// move.
func (w *window) inStep(r Reading) bool {
	if w.refill <= 0 || w.limit <= 0 {
		return false
	}
	full := w.toFull(r)
	return (r.Reset - full).Abs() <= w.resolution()
}

// offStep reports whether r is far out of step with the bucket the window
// has been found to be: its reset more than a quarter, and more than
// twice the resets' resolution, off the time to refill what it used. A
// bucket's resets keep in step whatever the order its answers come back
// in (each tells its own instant's level and time to full); a fixed
// window's reset is its wall's. Judged a bucket once, a fixed window of
// 10,000 tokens a second kept that while its readings said 31 left for
// 0.3 s: the tracker let prompts of 80 tokens go every 10 ms as the bucket
// it took the window for refilled, 30 refused in one window (4.9% of the
// run, told). So read, it is no bucket.
func (w *window) offStep(r Reading) bool {
	if w.refill <= 0 || w.limit <= 0 || w.sized {
		return false
	}
	full := w.toFull(r)
	return (r.Reset - full).Abs() > max(2*w.resolution(), max(r.Reset, full)/4)
}

// toFull is how long the bucket the window has been found to be takes to
// refill what r says it has used.
func (w *window) toFull(r Reading) time.Duration {
	return time.Duration(float64(w.limit-r.Left) / w.refill * float64(time.Second))
}
