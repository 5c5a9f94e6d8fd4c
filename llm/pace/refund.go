package pace

import (
	"slices"
	"sort"
	"time"
)

// Refunds. A refused request took no room in the server's window: a
// sliding log, a bucket, GCRA or a fixed window counts what it admits (a
// sliding counter that counts refusals too shows itself in its headers,
// see window.counting, and is not refunded). Counted in the own second as
// sent, a refused long prompt held its room there for a second although
// the server had it free. In the opening, against a sliding log of 10,000
// tokens a second with no headers, the first refusal (a 2,841-token prompt
// that did not fit the 2,200 left after 7,800 admitted) kept the lane from
// sending anything more until the opening's sends left the second: the
// estimator took the 7,800 admitted for the rate and held the pace at 78%
// of the truth for 5 s. So the own second, and the told minute, count
// what went less what the server refused of it: a refused send leaves
// them when its refusal comes back.
//
// Refunded alone, a refusal's room went at once to others, and while the
// pace was over the limit they were refused in turn, by the dozen: so a
// refusal about tokens also tells that the server's window was full, at
// what the own second held of the others and the refused request's units,
// and until that request's second has passed, the own second holds no
// more than what it held of the others and half of those units (the
// limit lies somewhere below the sum). Refusals by a false claim (see
// contradicted), and a probe's, refund nothing; one the noise level
// explains is refunded like any other, its window taken for full.

// keepRefunds is how long a refund is kept: longer than the told minute
// and any own second (a second and a guard of 50 ms at most).
const keepRefunds = time.Minute + time.Second

// refunds are the units of one quantity's sends that the server refused,
// by when they went (oldest first), over the last keepRefunds; and the
// most the own second holds until a refusal's second has passed.
type refunds struct {
	at    []time.Time
	sum   []float64 // the units refused of the sends up to each, it included
	most  float64   // the own second holds no more than this, before until
	until time.Time
}

// refund takes n units sent at sent out of the lane's own count, their
// refusal come back at now; full tells the refusal was about this
// quantity, whose window was then full (see above).
func (q *quantity) refund(now, sent time.Time, n float64, full bool) {
	if n <= 0 || q.win.counts() {
		return
	}
	q.back.add(now, sent, n)
	if !full {
		return
	}
	most := q.heldAfter(now.Add(-q.ownSecond())) + n/2
	if !now.Before(q.back.until) || most < q.back.most {
		q.back.most = most
	}
	q.back.until = later(q.back.until, sent.Add(q.ownSecond()))
}

// ownMost is what the own second holds at most now: most, or less while a
// refusal's second lasts (see refund).
func (q *quantity) ownMost(now time.Time, most float64) float64 {
	if now.Before(q.back.until) {
		return min(most, q.back.most)
	}
	return most
}

// add notes, at now, the refusal of n units sent at sent, and forgets
// refunds older than keepRefunds.
func (r *refunds) add(now, sent time.Time, n float64) {
	old := now.Add(-keepRefunds)
	if drop := sort.Search(len(r.at), func(i int) bool { return !r.at[i].Before(old) }); drop > 0 {
		base := r.sum[drop-1]
		r.at, r.sum = slices.Delete(r.at, 0, drop), slices.Delete(r.sum, 0, drop)
		for i := range r.sum {
			r.sum[i] -= base
		}
	}
	if sent.Before(old) {
		return
	}
	i := sort.Search(len(r.at), func(i int) bool { return r.at[i].After(sent) })
	r.at, r.sum = slices.Insert(r.at, i, sent), slices.Insert(r.sum, i, r.before(i)+n)
	for j := i + 1; j < len(r.sum); j++ {
		r.sum[j] += n
	}
}

// before is what was refused of the first i refunds' sends.
func (r *refunds) before(i int) float64 {
	if i == 0 {
		return 0
	}
	return r.sum[i-1]
}

// after is what was refused of the sends that went after t.
func (r *refunds) after(t time.Time) float64 {
	i := sort.Search(len(r.at), func(i int) bool { return r.at[i].After(t) })
	return r.before(len(r.at)) - r.before(i)
}

// refunded reports whether the lane's own count has refunds to take out.
func (q *quantity) refunded() bool { return !q.win.counts() && len(q.back.at) > 0 }

// counts reports whether the window is known to be a sliding counter,
// which counts refused requests too: followed as one, or paced under its
// limit for resets too coarse to follow (see counter.blurred).
func (w *window) counts() bool { return w.ctr.length > 0 && w.limit > 0 }

// heldAfter is what the server holds, as far as the lane knows, of its
// sends after t: what went, less what was refused of it.
func (q *quantity) heldAfter(t time.Time) float64 {
	held := q.count - q.win.log.countAt(t)
	if q.refunded() {
		held -= q.back.after(t)
	}
	return held
}

// heldTo is the first send after which heldAfter is c at most (zero when
// before anything the send log keeps); ok is false when none is.
func (q *quantity) heldTo(c float64) (t time.Time, ok bool) {
	l := &q.win.log
	if !q.refunded() {
		return l.reaching(q.count - c)
	}
	if q.count-l.floor-q.back.after(time.Time{}) <= c {
		return time.Time{}, true
	}
	// What the sends after the i-th hold, refunds taken out, shrinks as i
	// grows: a send adds to it what it refunds at most.
	i := sort.Search(len(l.cum), func(i int) bool { return q.count-l.cum[i]-q.back.after(l.at[i]) <= c })
	if i == len(l.cum) {
		return time.Time{}, false
	}
	return l.at[i], true
}
