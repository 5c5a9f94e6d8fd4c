package pace

import (
	"cmp"
	"time"
)

// roomOrProbe is room, and when there is none, whether n units (and the
// kept room with them) may go to probe; if they may later, wait is no
// longer than until then.
//
// A probe is a request let go although the window has not the room for
// it, to test whether it is a sliding counter. A counter's reset reaches
// up to twice its length past its units, so the tracker, not told the
// length, holds them that long (see span); a lane that then sends only at
// resets would never show it that room came back from half of it on. So,
// in a window whose kind is not known and whose length is not told, one
// request goes as far into the second half of the reset held as a counter
// of half that length would take to give it back. Admitted, its reading
// tells what is left (and the reset's move, the counter); refused, the
// hold is real, and no other goes until the window has held the lane for
// long (see mayProbe). Room kept for others (kept) goes with
// it: held for requests that waited their turn, it barred every probe,
// and the longest waiting, its patience out by the reset held, had its
// own room kept, so that no one probed: a counter of a minute filled at
// the opening was followed as a window of two (1.63x, one run in six).
func (w *window) roomOrProbe(now time.Time, count, n, kept float64) (ok bool, wait time.Duration, probe bool) {
	if ok, wait = w.room(now, count, n, kept); ok {
		return ok, wait, false
	}
	if _, held := w.rollHold(now, count); held {
		return false, wait, false // the first at a roll is on its way: no probe beside it (see roll.go)
	}
	at, may := w.probeAt(now, n+kept)
	w.late.due = false
	if !may {
		at, may = w.lateProbeAt(now, n+kept)
		w.late.due = may
	}
	switch {
	case !may:
		return false, wait, false
	case now.Before(at):
		return false, min(wait, at.Sub(now)), false
	}
	return true, 0, true
}

// maxProbes is how many probes a window may take while its kind stays
// unknown. Admitted, one tells what was left and moves the reset, and the
// sends it lets resume show the rest; more would only risk refusals (with
// answers jittered on their way a counter's resets may never be seen to
// stand, and a probe went about every second until one was refused), and
// at a penalty box a refused one costs a ban. (Once the longest reset has
// grown by a quarter, it may take another: see reprobe; and one each time
// it has held the lane for long: see mayProbe.)
const maxProbes = 1

// probeAt is when n units may go to probe (see roomOrProbe): as far into
// the second half of the longest reset seen as a counter of half that
// length takes to give them back, and a tenth more; ok is false if they
// may not: also when a told rate gives the length (see toldLength), which
// lets units go after it, and when a stay under half the longest reset
// was shown (see late.go, taken.go): the tracker lets them go after it
// already. (A GCRA's stay, 0.38 s, shown by the lane's count at 1.5 s,
// its reset 1 s: the probe went with the six the stay let go, was
// refused, and its reading, counted before theirs, held the lane for a
// second as the server's count of others.)
func (w *window) probeAt(now time.Time, n float64) (at time.Time, ok bool) {
	if w.limit <= 0 || w.length > 0 || w.toldLength() > 0 || w.counting() || w.refill > 0 || !w.mayProbe(now) ||
		n > w.base || !now.Before(w.reset) || w.late.stay > 0 && 2*w.late.stay < w.period {
		return time.Time{}, false
	}
	half := w.period / 2
	return w.reset.Add(-half + time.Duration(float64(half)*min(1, n/w.base+0.1))), true
}

// reprobe lets probes go again once the longest reset seen has grown by a
// quarter past what it was when the last one went, reset a reading's: a
// probe tests a counter of half of it, and one so much longer is another
// guess. The one probe of a counter's opening went when its resets had
// reached 1.5 s; at 2 s (a counter of 1 s, answered 1.5 s late), its
// sends gathered every 2 s at one instant, where a log of 2 s or a fixed
// window of 2 s gives its room back, and only a probe in between shows it.
func (w *window) reprobe(reset time.Duration) {
	if w.probes > 0 && w.probed == 0 {
		w.probed = w.period // no reading came in since it went
	}
	if w.probed > 0 && 4*reset > 5*w.probed {
		w.probes, w.probed = 0, 0
	}
}

// heldProbes is when a window's probes went (see mayProbe).
type heldProbes struct {
	first time.Time // when the first reading came
	last  time.Time // when the last probe went; zero: none
	late  int       // probes let go past maxProbes, or into a wall
}

// holdSpans is how many of its longest resets a window whose kind the
// tracker has guessed (a wall, or a log after its probe) may hold the lane
// before another probe goes, at first; it doubles with each.
const holdSpans = 8

// mayProbe reports whether a probe may go now: while the window's kind
// is unknown, up to maxProbes; and then, a wall or a log as its resets
// show it, one more each time it has held the lane for holdSpans of its
// longest resets since the last probe (or its first reading), doubling
// with each. A sliding counter whose sends gather where the tracker gives
// room back shows the resets of a fixed window of twice its length (they
// stand, and move on by two lengths once reached), and only a request
// sent between them tells it apart: its opening's probe spent (refused,
// or its late answer read against a reading of the walls before), such a
// counter of 20 a second, answered 0.5-4.5 s late, was followed as a wall
// of 2 s for whole runs, half its rate sent. A wall that is one refuses
// each such probe, which costs its own request a hint (see refused): a
// few in a run, their holds doubling.
func (w *window) mayProbe(now time.Time) bool {
	if w.probes < maxProbes && !w.wall {
		return true
	}
	from := cmp.Or(w.held.last, w.held.first)
	return !from.IsZero() && now.Sub(from) >= (holdSpans<<w.held.late)*w.period
}

// probeSent notes that a probe went at now.
func (w *window) probeSent(now time.Time) {
	if w.late.due {
		w.lateSent(now)
		return
	}
	if w.probes >= maxProbes || w.wall {
		w.held.late++
	}
	w.probes++
	w.held.last = now
}
