package pace

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// heldByAll is held as every waiter worked it out before the queue was
// kept in order: a look at every turn, the bigger waiters sorted, biggest
// first.
func heldByAll(ln *lane, now time.Time, t *turn, kept float64) float64 {
	var held float64
	var first []*turn
	for u := range ln.queue.set {
		switch {
		case u == t:
		case u.passing:
			held += u.tokens
		case u.waiting && u != ln.keeper && t != ln.keeper && !t.passing && u.before(t):
			first = append(first, u)
		}
	}
	slices.SortFunc(first, order)
	for _, u := range first {
		if ln.fitsBeside(now, u.tokens, held, kept) {
			held += u.tokens
		}
	}
	return held
}

// TestQueueOrder joins, passes and leaves turns at random and checks that
// the queue keeps its order and its sum of what passes, and that, with
// fewer turns ahead than maxAhead, each waiter's held is what a look at
// every turn gives.
func TestQueueOrder(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	r := rand.New(rand.NewPCG(1, 2))
	ln, _ := queued(t0, 900)
	var all []*turn
	for step := range 500 {
		switch k := r.IntN(10); {
		case k < 4 || len(all) == 0:
			tu := &turn{tokens: float64(50 * (1 + r.IntN(12))), seq: ln.queue.next, start: t0, waiting: r.IntN(4) > 0}
			ln.queue.next++
			ln.join(tu)
			ln.join(tu) // again: nothing changes
			all = append(all, tu)
		case k < 7:
			ln.pass(all[r.IntN(len(all))], r.IntN(2) == 0)
		default:
			i := r.IntN(len(all))
			ln.leave(all[i])
			all = slices.Delete(all, i, i+1)
		}
		if !slices.IsSortedFunc(ln.queue.order, order) || len(ln.queue.order) != len(ln.queue.set) {
			t.Fatalf("step %d: order of %d turns not sorted or not the set's %d", step, len(ln.queue.order), len(ln.queue.set))
		}
		var passing float64
		for u := range ln.queue.set {
			if u.passing {
				passing += u.tokens
			}
		}
		if passing != ln.queue.passing {
			t.Fatalf("step %d: passing %v, the turns' %v", step, ln.queue.passing, passing)
		}
		now := t0.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
		for _, u := range all {
			if got, want := ln.heldNow(now, u), heldByAll(ln, now, u, 0); got != want {
				t.Fatalf("step %d: held for %v = %v, a look at every turn gives %v", step, u.tokens, got, want)
			}
		}
	}
}

// heldNow is held with no room kept.
func (ln *lane) heldNow(now time.Time, t *turn) float64 {
	h, _ := ln.held(now, t, 0)
	return h
}

// BenchmarkHeld is one wake of a lane with 1,024 waiters: each works out
// the room that goes to others before it. A look at every bigger waiter
// cost 215 ms here.
func BenchmarkHeld(b *testing.B) {
	t0 := time.Unix(1_000_000, 0)
	sizes := make([]float64, 1024)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range sizes {
		sizes[i] = float64(10 + r.IntN(990))
	}
	ln, ts := queued(t0, 900, sizes...)
	now := t0.Add(time.Second)
	for b.Loop() {
		for _, tu := range ts {
			ln.held(now, tu, 0)
		}
	}
}
