package pace

import "time"

// The rate a window the lane's tracker follows lets through. Where the
// tracker knows a window's kind from its headers (a fixed window, whose
// reset stands until its wall; a bucket, whose reset keeps in step with
// what it refills), it holds the lane's sends to what the window has
// left, whatever the pace. A refusal there says the tracker's count was
// off (answers of requests sent together reach the server in another order
// than they went, so a reading may not count sends the lane made just
// before it), not that the pace is over the window's rate: the pace cut
// under that rate only starves the run. So a cut for such a refusal goes
// no lower than a twentieth under the rate the window admits (see
// estimator.least).
//
// Against a fixed window of 20,000 tokens a second with OpenAI's headers,
// told nothing (bench/tokens.sh), the first pace came from a second that
// spanned a window's edge (1.9x the rate), and the tracker held the sends;
// long prompts refused at window starts, by the readings' order, cut it a
// tenth at a time, then deep once 24 requests were refused at one start,
// to 0.73 of the rate, where it stayed for 17 s: 1.15-1.43x in three runs
// of seven. With this floor alone two runs took 0.99x (3.0% and 4.7%
// refused); counted (below) keeps most such misses away, and the floor is
// for those left: a count off by the estimate of a prompt's tokens, say.

// admits returns the rate the window lets through as the tracker follows
// it, units a second: a bucket's refill, a fixed window's limit over its
// span (its longest reset seen and a guard: answers come a little into a
// window, so the longest reset falls short of its length, and the limit
// over it passed the rate by 5%; refused at each wall a GitHub-style fixed
// second ran 1.13x); 0 when the tracker does not know it: nothing told, a
// sliding window or counter, or resets in whole seconds, which place a
// wall only within a second.
func (w *window) admits() float64 {
	switch {
	case w.late.stay > 0 && w.limit > 0:
		return w.base / w.span().Seconds() // as late probes or the lane's count showed it (see late.go, taken.go)
	case w.limit <= 0 || w.counting() || !w.fine:
		return 0
	case w.refill > 0:
		return w.refill
	case w.wall && w.period > 0:
		return float64(w.limit) / w.span().Seconds()
	}
	return 0
}

// admitsTold is admits for a refusal of n units whose reading r told the
// window had less left than that: the window's own refusal. For one that
// did not tell the window, or told it had room (another limit refused:
// a day's beside the minute's, a minute's enforced by the second), 0.
func (w *window) admitsTold(r Reading, n float64) float64 {
	if !r.Told || float64(r.Left) >= n {
		return 0
	}
	return w.admits()
}

// least is the lowest pace a cut for the refusal cut may go to: a unit a
// minute, the estimator's floor, and the rate the window its headers told
// admits (see admits), the told limit and the pace refused at most: a
// floor, never a lift.
func (e *estimator) least(cut pending) float64 {
	return max(minRate, e.floor, min(cutTo*cut.tracked, e.ceil, cut.rate))
}

// counted returns, for a reading of a request sent at sentAt when the
// lane's count was seq, in which the server counted used (inWindow: the
// lane's count a span before), the lane's count below which the reading
// counted none of its units (see window.lo) and what it counted besides
// the lane's own. A fixed window's first reading after its wall may come
// from a request the server took before others the lane sent just before
// it (requests sent together reach the server in any order): what the
// lane sent after the wall is in the window all the same, and the
// reading's count, short of it, counted nothing besides. (Taking them for
// the window before, the tracker let 11,000 tokens more go into a window
// of 20,000 just filled, and refused they cut the pace.)
func (w *window) counted(seq, used, inWindow float64, sentAt time.Time) (lo, excess float64) {
	lo = max(seq-used, inWindow)
	if !w.wall {
		return lo, used - (seq - lo)
	}
	if w.period > 0 && !w.reset.IsZero() && !sentAt.Before(w.reset) {
		w.began = w.reset.Add(sentAt.Sub(w.reset) / w.period * w.period) // the first reading past the wall held
	}
	if !w.began.IsZero() && !sentAt.Before(w.began) {
		lo = min(lo, max(w.log.countAt(w.began.Add(-time.Nanosecond)), inWindow)) // all sent from the wall on
	}
	return lo, max(used-(seq-lo), 0)
}

// rolled reports whether r, sent in the same instant as the reading held,
// tells of a fixed window begun after it: more left, a reset over twice as far.
func (w *window) rolled(r Reading, sentAt time.Time) bool {
	return r.Left > int(w.left) && w.reset.Sub(sentAt)-w.guard() < r.Reset/2
}
