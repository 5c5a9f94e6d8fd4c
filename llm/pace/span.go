package pace

import (
	"cmp"
	"time"
)

// How long a unit the lane sent stays in a window, as the tracker holds
// it (see window).

// guard is allowed for the way to the server: a reset counted from when a
// request was sent is a little early against the server's clock.
func (w *window) guard() time.Duration { return min(50*time.Millisecond, w.period/50) }

// span is how long a unit stays in the window at most: its told length, a
// sliding counter's, the length a told rate gives it, else the longest
// reset seen; the guard added. Of a told rate's length, or a stay late
// probes showed, shorter than half the longest reset, the guard is a
// fiftieth of that length at most, as it is of a reset: told 20 a second,
// a GCRA with a burst of 5 (a length of 0.3 s, its resets 1 s) was paced
// at 0.32 s a window, 1.06x; untold and answered 3 s late, at the same
// 0.32 s from the stay its late probes showed, 1.18x (1.14x so guarded).
// Not so of a length half the resets or more, which may be a sliding
// counter's (its resets reach twice its length, and the guard of those,
// cut to a length's, let one of 1 s refuse 0.5% rather than 0.2%).
func (w *window) span() time.Duration {
	l, g := w.lasts(), w.guard()
	if l > 0 && 2*l < w.period && (l == w.late.stay || w.late.stay == 0 && l == w.toldLength()) {
		g = min(g, l/50)
	}
	return l + g
}

// lasts is the span without its guard.
func (w *window) lasts() time.Duration {
	return w.late.shorten(cmp.Or(w.length, w.ctr.length, w.toldLength(), w.period))
}

// toldLength is the length a told rate gives a window of a limit said
// (its limit over the rate), at most the longest reset seen; 0 if not known.
func (w *window) toldLength() time.Duration {
	if w.told <= 0 || w.limit <= 0 {
		return 0
	}
	return min(time.Duration(float64(w.limit)/w.told*float64(time.Second)), w.period)
}
