package pace

import (
	"cmp"
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
// window full, halfway into the stays it may yet have after a send of
// the lane's (see lateRef). Its reading, however late, tells what the
// server counted when it went: against the readings of that send, what
// the server gave back in between had stayed no longer than the time
// since (all of it; of a bucket, which gives back part of them by then,
// that time over the part given back, as it refills at least evenly). The
// stay so shown, shorter, is the window's span from then on, and the next
// probe tests a shorter one still; a probe that shows none shorter, or is
// refused, makes the next wait holdSpans stays, doubling with each. Each
// probe is a unit past what the tracker lets go, so once a late probe
// has shown a stay one is on its way at a time (see flying).
type lateProbes struct {
	stay  time.Duration // the longest a unit stays in the window, as late probes (or the lane's count, see taken.go) showed; 0: not shown
	least time.Duration // the least it may stay, as they showed
	shown bool          // a late probe showed stay (not only the lane's count, see taken.go)
	fly   [lateFlying]lateProbe
	last  time.Time // when the last late probe went
	fails int       // late probes in a row that showed no shorter stay
	due   bool      // the probe roomOrProbe last let go is a late one (see probeSent)
	check time.Time // a refusal's send, whose window look is yet to read (see taken.go)
	ref   time.Time // when the oldest of the sends that held the window full, as lateProbeAt last saw them, went
	// off: none go (the token window's: a probe there is a prompt's
	// tokens past the tracker, and on a sliding log of tokens answered
	// 1.5 s late each was refused and showed nothing, 1.05x -> 1.17x the
	// reference with runs to 1.87x).
	off bool
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
	ahead   float64 // units the lane sent at its instant before it
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
// they may not: late probes are off, or the window's kind is known, or its length told, or its
// resets longer than lateLongest or finer than whole seconds (which tell a bucket by their moves,
// see judge, and a sliding log, probed so, refused each), or the
// reading held has not reached its reset, or readings come no later than
// a span, or a late probe is on its way (or lost: after twice the longest
// lag, another may go), or the last showed no shorter stay and the hold
// since it has not passed.
func (w *window) lateProbeAt(now time.Time, n float64) (at time.Time, ok bool) {
	span := w.span()
	switch {
	case w.late.off || w.limit <= 0 || !w.unknownKind():
		return time.Time{}, false
	case w.reset.IsZero() || now.Before(w.reset) || w.lag <= span || n > w.base:
		return time.Time{}, false
	case now.Sub(w.late.last) < span || w.late.free(now, w.lag, w.late.flying()) == nil:
		return time.Time{}, false
	case w.late.fails > 0 && now.Sub(w.late.last) < (holdSpans<<(w.late.fails-1))*span:
		return time.Time{}, false
	}
	stay := w.lasts()
	if 20*(stay-w.late.least) < stay {
		return time.Time{}, false // known well enough
	}
	return w.lateRef(now, w.late.next(now, w.lag, stay), stay)
}

// next is the stay the next late probe tests. Once a late probe showed
// one, or while none is known, it is halfway between the least the stay
// may be and the longest: a bisection. A stay only the lane's count
// showed (see taken.go) is near the true one already, and halfway is far
// under it: the probes that go before the first answer comes back, as
// many as the lag holds stays (eight at most, see flying), split it, the
// k-th on its way testing k parts of n+1 under it, so that one round of
// answers tests n stays. (All halfway, each probe showed only that a
// third of the window came back in that time: a GCRA of 20 a second with
// a burst of 5, answered 3 s late, its stay 0.38 s by the count, the true
// one 0.3 s, took 1.10-1.11x the reference; split, 1.08-1.09x.)
func (l *lateProbes) next(now time.Time, lag, stay time.Duration) time.Duration {
	n := 1
	if l.stay > 0 && !l.shown {
		n = min(lateFlying, max(1, int(lag/max(stay, time.Millisecond))))
	}
	k := 0
	for _, p := range l.fly {
		if !p.at.IsZero() && now.Sub(p.at) <= 2*lag {
			k++
		}
	}
	return stay - (stay-l.least)*time.Duration(k%n+1)/time.Duration(n+1)
}

// lateRef is when a late probe testing a stay of mid goes, and the send
// it is read against (late.ref): the newest that went mid before now or
// earlier, unless it went so long before that the probe tests a stay
// nearer the one shown than mid; then the first after, mid after it. The
// time that goes by between a probe and its send is what it tests,
// whatever was sent between; a probe let go the moment the window had
// no room, read against the oldest of the sends holding it, tested what
// the stay before had shown (the stay just shortened to 0.5 s, the lane
// sent its room at once, and a probe then was 0.44 s from them, a round
// of answers 3 s late spent for nothing).
func (w *window) lateRef(now time.Time, mid, stay time.Duration) (at time.Time, ok bool) {
	if t, ok := w.log.before(now.Add(-mid)); ok && now.Sub(t) < (mid+stay)/2 {
		w.late.ref = t
		return now, true
	}
	t, ok := w.log.after(now.Add(-mid))
	if !ok {
		return time.Time{}, false
	}
	w.late.ref = t
	return t.Add(mid), true
}

// waiting notes that the oldest request not yet answered went at sent
// (zero: none): its reading comes as late as now at least. Answered 3 s
// late, a GCRA's first late probe waited for the first answer, 3 s,
// though from 1.5 s on it was plain that they came later than its resets.
func (w *window) waiting(now, sent time.Time) {
	if !sent.IsZero() {
		w.lag = max(w.lag, now.Sub(sent))
	}
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
func (l *lateProbes) free(now time.Time, lag time.Duration, most int) *lateProbe {
	var place *lateProbe
	for i := range l.fly {
		switch p := &l.fly[i]; {
		case p.at.IsZero() || now.Sub(p.at) > 2*lag:
			place = cmp.Or(place, p)
		default:
			most--
		}
	}
	if most <= 0 {
		return nil
	}
	return place
}

// flying is how many late probes may be on their way at once: lateFlying
// while the lane holds to its log (or to a stay only its count showed),
// one once a late probe showed a stay. Each goes
// a unit past what the tracker lets go, and, sent as the lane's own
// sends fill the window each span, one each span went a seventh past a
// window of 6 (a GCRA of 20 a second, paced at its stay, 0.3 s, is
// drained so: refused at 13 s, the pace cut to 12 a second, 1.5-1.9x in
// one run in five).
func (l *lateProbes) flying() int {
	if l.shown {
		return 1
	}
	return lateFlying
}

// bound takes from r, the reading of the late probe p sent at sentAt when
// the lane's count was seq, the bounds it sets the stay against the
// readings of the sends its stay is measured from (their least left, of
// what they all took): what the server gave back in between, over that
// time, is the rate it refills at least, and a window's worth at that
// rate the stay; a log or a window that gave back all it held shows the
// stay that time or shorter. Told in whole units, what it gave back may
// be off by one either way. What it gave back at most bounds the stay
// from below only where that is less than it held: a bucket that may
// have refilled all it lacked may have stood full, refilling nothing,
// for part of the time (one of 20 a second, short of 5 of its 6, gave
// back 5 in 0.306 s and was taken to stay 0.306 s at least, its stay 0.3
// s: the foreign zoo's cell ran to 1.11x and 1.16x so, 1.09x at most
// not). A refused probe, or one that shows nothing, holds the next (see
// lateProbeAt).
func (w *window) bound(p lateProbe, r Reading, sentAt time.Time, seq float64) {
	if p.ref.IsZero() || p.refLeft >= math.MaxInt32 || w.base <= 0 {
		return
	}
	d, held := sentAt.Sub(p.ref).Seconds(), w.base-p.refLeft
	// Sent at one instant, requests reach the server in any order: the
	// probe may have been counted before those that went with it.
	given := float64(r.Left) - p.refLeft + seq - p.ahead - w.log.countAt(p.ref)
	more := float64(r.Left) - p.refLeft + w.log.countAt(sentAt) - w.log.countAt(p.ref)
	most := w.lasts()
	switch {
	case given >= held && held > 0:
		most = min(most, seconds(d*w.base/min(given, w.base)))
	case more < 1:
		w.late.fails++
		return
	default:
		if more+1 < held {
			w.late.least = max(w.late.least, seconds(d*w.base/(more+1)))
		}
		if given >= 2 {
			most = min(most, seconds(d*w.base/(given-1)))
		}
	}
	if most < w.lasts() {
		w.late.stay, w.late.fails, w.late.shown = most, 0, true
		w.late.drop(most)
	}
	w.late.least = min(w.late.least, most)
}

// drop gives up the late probes on their way that went as long after
// their sends as stay or longer: whatever they show, it is no shorter,
// and with one let go at a time once a stay is shown (see flying), they
// held the next probe a round of answers (2.3 s, answered 3 s late).
func (l *lateProbes) drop(stay time.Duration) {
	for i := range l.fly {
		if p := &l.fly[i]; !p.at.IsZero() && p.at.Sub(p.ref) >= stay {
			p.at = time.Time{}
		}
	}
}

// seconds is s seconds as a Duration, rounded up.
func seconds(s float64) time.Duration { return time.Duration(math.Ceil(s * float64(time.Second))) }

// lateSent notes that a late probe went at now, its stay measured from
// the oldest of the sends that held the window full.
func (w *window) lateSent(now time.Time) {
	if p := w.late.free(now, w.lag, lateFlying); p != nil {
		ahead := w.log.countAt(now) - w.log.countAt(now.Add(-1))
		*p = lateProbe{at: now, ref: w.late.ref, refLeft: math.MaxInt32, ahead: ahead}
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
