package pace

import (
	"sort"
	"time"
)

// Readings by the send time of their requests. A window's kind shows in
// how its reset moves from one request to the next as the server counted
// them, in the order they went; answers as slow and uneven as a model's
// (0.5 s to 4.5 s) come back in another. The tracker judges the readings
// that come in order as they come (see stand); one that comes after a
// reading of a later request (older, to read) it judges against the
// readings of the requests sent just before and just after it (see
// reordered). Judged only in the order they came, a counter of 20 a
// second, answered 0.5-4.5 s late, was followed as a fixed window of 2 s
// for a whole run, half its rate sent (1.74x): the one request sent
// between its walls, whose reset moved on by a second before the end held
// was reached, was answered 4.4 s later, after those of the next wall.

// toldEnd is what one reading told of the window's reset.
type toldEnd struct {
	sent  time.Time     // when its request went
	left  int           // what it said was left
	reset time.Duration // its reset, from sent
}

// end is when the reading said all it counted is back.
func (e toldEnd) end() time.Time { return e.sent.Add(e.reset) }

// sentOrder is the readings of the last few spans, by the send time of
// their requests, oldest first, maxOrdered at most.
type sentOrder struct{ ends []toldEnd }

// maxOrdered bounds the readings a sentOrder keeps; the oldest go first.
const maxOrdered = 512

// add takes in r, the reading of a request sent at sentAt, keeping those
// of requests sent keep before the newest; it returns its place, or -1
// for a reading that told no reset.
func (o *sentOrder) add(r Reading, sentAt time.Time, keep time.Duration) int {
	if !r.Told || r.Reset <= 0 {
		return -1
	}
	i := sort.Search(len(o.ends), func(i int) bool { return o.ends[i].sent.After(sentAt) })
	o.ends = append(o.ends, toldEnd{})
	copy(o.ends[i+1:], o.ends[i:])
	o.ends[i] = toldEnd{sent: sentAt, left: r.Left, reset: r.Reset}
	newest := o.ends[len(o.ends)-1].sent
	drop := sort.Search(len(o.ends), func(i int) bool { return !o.ends[i].sent.Before(newest.Add(-keep)) })
	drop = max(drop, len(o.ends)-maxOrdered)
	o.ends = o.ends[drop:]
	return i - drop // -1 or less if it was dropped itself
}

// before is the place of the newest reading of a request sent before the
// one at i; -1 if none is kept.
func (o *sentOrder) before(i int) int {
	j := i - 1
	for j >= 0 && !o.ends[j].sent.Before(o.ends[i].sent) {
		j--
	}
	return j
}

// after is the place of the oldest reading of a request sent after the
// one at i; -1 if none is kept.
func (o *sentOrder) after(i int) int {
	j := i + 1
	for j < len(o.ends) && !o.ends[j].sent.After(o.ends[i].sent) {
		j++
	}
	if j == len(o.ends) {
		return -1
	}
	return j
}

// from is when the first request went of those sent up to the one at i
// whose readings all told its end, within tol.
func (o *sentOrder) from(i int, tol time.Duration) time.Time {
	end, j := o.ends[i].end(), i
	for j > 0 && (o.ends[j-1].end().Sub(end)).Abs() <= tol {
		j--
	}
	return o.ends[j].sent
}

// reordered judges the reading at i of the window's send order (see add),
// one that came after a reading of a later request, by the moves of the
// reset to it from the reading sent just before and from it to the one
// sent just after; a counter so found is followed from the reading held.
func (w *window) reordered(i int) {
	if i < 0 || w.ctr.length > 0 || w.limit <= 0 || w.reset.IsZero() {
		return
	}
	if p := w.order.before(i); p >= 0 {
		w.sentMove(p, i)
	}
	if n := w.order.after(i); n >= 0 && w.ctr.length == 0 {
		w.sentMove(i, n)
	}
	if w.ctr.length > 0 {
		w.refill, w.wall = 0, false
		if w.fine {
			w.ctr.origin = w.order.ends[0].end().Add(-w.ctr.tick) // see refine
		}
		reset := w.reset.Sub(w.at) - w.guard()
		w.ctr.read(&w.log, w.base-w.left, w.at, reset, w.seq, false, w.guard())
	}
}

// sentMove judges the move of the reset from the reading at p of the send
// order to the one at n, sent after it, as stand judges one from the
// reading held to a newer one: on, before p's end was reached (and the
// guard and the way to the server before it), from an end that stood for
// requests sent apart or as no sliding log's moves (see unlikeLog), in a
// window not known to be a bucket, it may be a counter's (see
// counter.move and halved); but not to a reset of the longest seen, which
// a sliding log tells every request it admits, whenever it goes: from a
// refused probe's end, at the log's newest unit, one sent a second after
// that unit moved it on by half its 2 s, as a counter of 1 s would, and
// the log was so taken (1.05x -> 1.67x, a seed of the zoo's jitter).
func (w *window) sentMove(p, n int) {
	tol, prev, next := w.resolution(), w.order.ends[p], w.order.ends[n]
	early := 2 * w.guard()
	if !w.fine {
		early += tol
	}
	d := next.end().Sub(prev.end())
	if d <= tol || next.reset >= w.period-tol || !next.sent.Before(prev.end().Add(w.guard()-early)) {
		return
	}
	r := Reading{Told: true, Limit: w.limit, Left: next.left, Reset: next.reset}
	from := w.order.from(p, tol)
	stood := prev.sent.Sub(from) >= tol
	if w.inStep(r) || !stood && !w.unlikeLog(r, d, next.sent.Sub(prev.sent)) {
		return
	}
	w.ctr.move(d, next.sent.Sub(from), tol, next.end().Add(w.guard()))
	w.halved(r, d)
}
