package pace

import (
	"math"
	"time"
)

// Late probes: what a window of unknown kind shows when its answers come
// later than its resets. Each reading's reset has passed by the time it
// is read, so the tracker holds the lane to its own log: a unit it sent
// stays in the window for the longest reset seen (see span), however
// soon the server gives it back. The timely probe (see probeAt) never
// goes, as it goes only before the reset held; and readings that show
// room the lane did not use all come after their resets, old news. So a
// GCRA of 20 a second with a burst of 5, its time to full told in whole
// seconds (1 s), answered 3 s late, was followed as a log of 6 a second:
// 3.1x the ideal.
//
// A late probe is one request let go while the lane's own sends hold the
// window full, as far into the stay of the newest of them as a probe goes
// into a reset (see probeAt). Its reading, however late, tells what the
// server counted when it went: what it no longer counted of the lane's
// sends before it had stayed no longer than the time since they went
// (all of them sent at one instant; of a bucket, which gives back part
// of them by then, that time over the part given back, as it refills at
// least evenly). The stay so shown, shorter, is the window's span from
// then on, and the next probe tests a shorter one still; a probe that
// shows none shorter, or is refused, makes the next wait holdSpans stays,
// doubling with each.
type lateProbes struct {
	stay  time.Duration // the longest a unit stays in the window, as late probes showed; 0: not shown
	least time.Duration // the least it may stay, as they showed
	fly   [lateFlying]lateProbe
	last  time.Time // when the last late probe went
	fails int       // late probes in a row that showed no shorter stay
	due   bool      // the probe roomOrProbe last let go is a late one (see probeSent)
	ref   time.Time // when the oldest of the sends that held the window full, as lateProbeAt last saw them, went
}

// lateLongest is the longest reset a window late probes look into may
// have shown: whole seconds tell nothing of how units leave a window of a
// second or two, but of a longer one their moves do (a sliding log of a
// minute answered 90 s late, probed so, was refused twice as often).
const lateLongest = 2 * time.Second

// lateFlying is how many late probes may be on their way at once: one
// each time the window fills, a span apart, as answers come many spans
// late (one at a time, a GCRA answered 3 s late took 40 s to find its
// stay).
const lateFlying = 8

// A lateProbe is one on its way: when it went, and the oldest of the
// sends that held the window full then, and the least their readings
// said was left, so far.
type lateProbe struct {
	at, ref time.Time // zero at: none
	refLeft float64
}

// shorten is the window's length d, or the stay late probes showed if
// shorter.
func (l *lateProbes) shorten(d time.Duration) time.Duration {
	if l.stay > 0 && l.stay < d {
		return l.stay
	}
	return d
}

// lateProbeAt is when n units may go as a late probe; ok is false if
// they may not: the window's kind is known, or its length told, or its
// resets longer than lateLongest or finer than whole seconds (which tell a bucket by their moves,
// see judge, and a sliding log, probed so, refused each), or the
// reading held has not reached its reset, or readings come no later than
// a span, or a late probe is on its way (or lost: after twice the longest
// lag, another may go), or the last showed no shorter stay and the hold
// since it has not passed.
func (w *window) lateProbeAt(now time.Time, count, n float64) (at time.Time, ok bool) {
	span := w.span()
	switch {
	case w.limit <= 0 || w.fine || w.period > lateLongest || w.length > 0 || w.toldLength() > 0 || w.counting() || w.refill > 0 || w.wall:
		return time.Time{}, false
	case w.reset.IsZero() || now.Before(w.reset) || w.lag <= span || n > w.base:
		return time.Time{}, false
	case now.Sub(w.late.last) < span || w.late.free(now, w.lag) == nil:
		return time.Time{}, false
	case w.late.fails > 0 && now.Sub(w.late.last) < (holdSpans<<(w.late.fails-1))*span:
		return time.Time{}, false
	}
	// The newest sends that hold the window leave at back; they went a
	// span before it.
	back := w.until(now, count, n)
	stay := span - w.guard()
	if 20*(stay-w.late.least) < stay {
		return time.Time{}, false // known well enough
	}
	w.late.ref = back.Add(-span)
	return w.late.ref.Add((w.late.least + stay) / 2), true
}

// lateRead takes from r, the reading of a request sent at sentAt when the
// lane's count was seq, what it tells of the stay: of a late probe on its
// way, and of the sends its stay is measured from (see stayShown).
func (w *window) lateRead(r Reading, sentAt time.Time, seq float64) {
	if !r.Told {
		return
	}
	for i := range w.late.fly {
		p := &w.late.fly[i]
		switch {
		case p.at.IsZero():
		case sentAt.Equal(p.ref):
			p.refLeft = min(p.refLeft, float64(r.Left))
		case sentAt.Equal(p.at):
			w.bound(*p, r, sentAt, seq)
			p.at = time.Time{}
			return
		}
	}
}

// free returns a place for a late probe, nil if none: those lost (no
// answer for twice the longest lag) are given up.
func (l *lateProbes) free(now time.Time, lag time.Duration) *lateProbe {
	for i := range l.fly {
		if p := &l.fly[i]; p.at.IsZero() || now.Sub(p.at) > 2*lag {
			return p
		}
	}
	return nil
}

// bound takes from r, the reading of the late probe p sent at sentAt when
// the lane's count was seq, the bounds it sets the stay against the
// readings of the sends its stay is measured from (their least left, of
// what they all took): what the server gave back in between, over that
// time, is the rate it refills at least, and a window's worth at that
// rate the stay; a log or a window that gave back all it held shows the
// stay that time or shorter. Told in whole units, what it gave back may
// be off by one either way. A refused probe, or one that shows nothing,
// holds the next (see lateProbeAt).
func (w *window) bound(p lateProbe, r Reading, sentAt time.Time, seq float64) {
	if p.ref.IsZero() || p.refLeft >= math.MaxInt32 || w.base <= 0 {
		return
	}
	d, held := sentAt.Sub(p.ref).Seconds(), w.base-p.refLeft
	given := float64(r.Left) - p.refLeft + seq - w.log.countAt(p.ref)
	most := w.span() - w.guard()
	switch {
	case given >= held && held > 0:
		most = min(most, seconds(d*w.base/held))
	case given < 1:
		w.late.fails++
		return
	default:
		w.late.least = max(w.late.least, seconds(d*w.base/(given+1)))
		if given >= 2 {
			most = min(most, seconds(d*w.base/(given-1)))
		}
	}
	if most < w.span()-w.guard() {
		w.late.stay, w.late.fails = most, 0
	}
	w.late.least = min(w.late.least, most)
}

// seconds is s seconds as a Duration, rounded up.
func seconds(s float64) time.Duration { return time.Duration(math.Ceil(s * float64(time.Second))) }

// lateSent notes that a late probe went at now, its stay measured from
// the oldest of the sends that held the window full.
func (w *window) lateSent(now time.Time) {
	if p := w.late.free(now, w.lag); p != nil {
		*p = lateProbe{at: now, ref: w.late.ref, refLeft: math.MaxInt32}
	}
	w.late.last = now
}

// lateRefused notes a refusal of a request that was no probe: the stay
// late probes showed is too short for what the window holds (a bucket
// whose left, told in whole units, made it seem to give back a unit
// more), so it grows by an eighth, and the next probe waits.
func (w *window) lateRefused() {
	if w.late.stay > 0 {
		w.late.stay = min(w.late.stay+w.late.stay/8, w.period)
		w.late.least = min(w.late.least, w.late.stay)
		w.late.fails++
	}
}
