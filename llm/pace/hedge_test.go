package pace

import (
	"math"
	"testing"
	"time"
)

// TestHedgeUndone: a ban of 2 s after 20 in a window of 1.01 s, with no
// hint. The epoch refused took 20 in the 1 s out of its holds, and
// nothing in the 2 s held: the cut goes to the rate over the holds, a
// window of 20 in 3 s as likely as a ban. A pace over that which the
// server keeps up longer than such a window allows goes back to a tenth
// under the rate refused, not a step a ban's worth at a time.
func TestHedgeUndone(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.rtt = 20, 50*ms
	e.ep = epoch{start: t0, admitted: 20, refused: 2, answers: 22, nays: 2, held: 2 * time.Second, walled: 2 * time.Second}
	cut := pending{at: at(3035 * ms), sentRate: 20, rate: 20, n: 1}
	next, bad := e.bracket(cut)
	if h := e.hedge; next > 7 || bad < 19 || h.rate > 7 || h.back < 18 || h.back > 19 {
		t.Fatalf("the ban's cut: next %.2f, bad %.2f, hedge %+v; want under 7/s, 20/s, a hedge at 6.7/s back to 18/s", next, bad, h)
	}
	e.hedge = hedge{}
	e.ep.held, e.ep.walled = 0, 0
	e.bracket(pending{at: at(1035 * ms), sentRate: 20, rate: 20, n: 1})
	if e.hedge.rate != 0 {
		t.Errorf("a cut with no holds in its epoch hedges %+v, want none", e.hedge)
	}

	e.hedge = hedge{rate: 6.7, window: 3035 * ms, back: 18}
	e.rate, e.good, e.bad, e.cost, e.costAt = 677.0/60, 677.0/60, 20, 2500*ms, at(3*time.Second)
	e.ep = epoch{start: at(6 * time.Second), admitted: 45}
	if next := e.up(at(10 * time.Second)); next != e.rate {
		t.Errorf("45 taken in 4 s at 11.3/s: next %.2f, want the pace held (a window of 20 in 3 s allows 47)", next)
	}
	e.ep.admitted = 68
	if next := e.up(at(12 * time.Second)); next != 18 {
		t.Errorf("68 taken in 6 s at 11.3/s: next %.2f, want 18/s (a window of 20 in 3 s allows 61)", next)
	}
}
