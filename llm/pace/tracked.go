package pace

import "time"

// What a fixed window's readings count of the lane's sends (see
// window.read), and whether a reading sent with others tells of a window
// begun since.

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
