package pace

import (
	"sort"
	"time"
)

// The own second against a sliding counter of unknown phase. The own
// second keeps every second of the lane's sends to the pace's worth, which
// is what a sliding log counts; a sliding counter counts the fixed window
// the instant is in and the window before, weighed by the share of it
// still within a length back, so sends that gather early in one window and
// early in the next (room comes back to the own second all at once, a
// second after a clump went) weigh there nearly twice: told 10,000 tokens
// a second and answered 1.5 s late, the opening's 7,964 tokens of the
// first second and 5,651 sent within 0.25 s of its end counted 11,624 at
// a counter, whose headers had not yet come back to tell it one; its
// refused long prompts, counted by the server, held the window, and one
// run in ten cut the pace to half and took 1.5-1.8x the reference. So,
// until the headers have shown a sliding log (see window.sliding) or a
// kind the tracker follows instead (see keptBySecond), a request also goes
// only when the lane's sends, as a counter of the own second's length
// would weigh them with its windows' ends anywhere, leave room for it. An
// even pace meets both alike (a counter weighs it as a log does); only
// clumps are held, and their room comes back as they weigh off, over the
// second after theirs, not at once.

// phaseSteps bounds the search for when a request fits every phase.
const phaseSteps = 12

// byPhases reports whether the own second of span is also held, at now,
// to every phase of a counter (see above): before the server has answered
// (nothing is known of its window), within two spans of the lane's first
// send, by when the opening's burst has weighed off at any counter of the
// span. (A longer opening, a minute's answered 90 s late, is the told
// minute's to keep: held there too, the sends of its first minute came
// later, weighed more at the next, and were refused.)
func (q *quantity) byPhases(now time.Time, span time.Duration) bool {
	l := &q.win.log
	return !q.heard && l.floor == 0 && len(l.at) > 0 && now.Before(l.at[0].Add(2*span))
}

// inPhases reports whether need units, sent now, leave what a counter of
// span would count at every phase within most; when not, wait is how long
// until they would, if nothing more is sent.
func (q *quantity) inPhases(now time.Time, span time.Duration, need, most float64) (ok bool, wait time.Duration) {
	if need > most || q.phased(now, span)+need <= most {
		return true, 0
	}
	lo, hi := time.Duration(0), 2*span // after two spans nothing weighs
	for range phaseSteps {
		mid := (lo + hi) / 2
		if q.phased(now.Add(mid), span)+need <= most {
			hi = mid
		} else {
			lo = mid
		}
	}
	return false, max(hi, time.Millisecond)
}

// phased is the most a sliding counter of length span, its windows' ends
// anywhere, counts at t (now or later, nothing sent after now) of what the
// server holds of the lane's sends. Between sends the count is linear in
// where the window began, so the most is where a window began at a send
// (it counted in the window then begun), or a span after one (it counted
// whole in the window before), or at t itself (the window before alone).
func (q *quantity) phased(t time.Time, span time.Duration) float64 {
	l := &q.win.log
	from := sort.Search(len(l.at), func(i int) bool { return l.at[i].After(t.Add(-2 * span)) })
	most := q.countedFrom(t, t, span)
	for _, at := range l.at[from:] {
		if s := at; s.After(t.Add(-span)) && !s.After(t) {
			most = max(most, q.countedFrom(t, s, span))
		}
		if s := at.Add(span); s.After(t.Add(-span)) && !s.After(t) {
			most = max(most, q.countedFrom(t, s, span))
		}
	}
	return most
}

// countedFrom is what a counter of length span whose window began at s
// counts at t: the sends from s on, and those of the span before s
// weighed by the share of it still within a span back from t.
func (q *quantity) countedFrom(t, s time.Time, span time.Duration) float64 {
	cur := q.heldAfter(s.Add(-1))
	prev := q.heldAfter(s.Add(-span-1)) - cur
	w := 1 - t.Sub(s).Seconds()/span.Seconds()
	return cur + max(w, 0)*prev
}
