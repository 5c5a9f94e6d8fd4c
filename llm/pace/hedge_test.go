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

// TestHedgeWindowFromHistory: a sliding log of 100 a 5 s took 100 at
// once (its burst), nothing for 4.6 s, 95 in the second after it
// reopened at 100 a second, and then, at 25 a second, nothing for 4 s
// and 100 in the 4 s after. The epoch refused at 25 a second took 100 in
// 8.6 s, holds and all: the hedge's window as long as the epoch would be
// 11 a second, but no 5 s of the lane's answers held more than the
// burst, and the window is 5 s long at most: the cut goes a little under
// 20 a second, not to 11.
func TestHedgeWindowFromHistory(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.rtt, e.span, e.full.burst = 25, 50*ms, 2425*ms, 100
	burst := func(from, to time.Duration, n int) {
		for i := range n {
			e.long.got.add(at(from+(to-from)*time.Duration(i)/time.Duration(n)), 1)
		}
	}
	burst(0, 600*ms, 100)
	burst(5240*ms, 6190*ms, 95)
	burst(10800*ms, 15040*ms, 100)
	e.ep = epoch{start: at(6440 * ms), admitted: 100, refused: 3, answers: 103, nays: 3, sends: 103, sent: 103,
		held: 4600 * ms, walled: 2 * time.Second}
	next, bad := e.bracket(pending{at: at(15040 * ms), sentRate: 25, rate: 25, n: 1})
	if next < 17 || next > 20 || bad < 24 {
		t.Errorf("next %.2f/s, bad %.2f/s; want 17-20/s (no 5 s held more than 100), and 25/s", next, bad)
	}
	if e.window != 5200*ms {
		t.Errorf("window shown %v, want 5.2s", e.window)
	}
}

// TestMeterLongest: the longest horizon no stretch of the meter holds
// more than a limit in.
func TestMeterLongest(t *testing.T) {
	var m meter
	for i := range 10 {
		m.add(at(time.Duration(i)*20*time.Millisecond), 1) // 10 in the first slot
		m.add(at(3*time.Second+time.Duration(i)*20*time.Millisecond), 1)
	}
	end := at(5 * time.Second)
	for _, c := range []struct {
		limit float64
		most  time.Duration
		want  time.Duration
	}{
		{10, time.Minute, 3 * time.Second}, // 3.2 s holds both tens
		{10, time.Second, time.Second},     // no longer than asked
		{5, time.Minute, 0},                // a slot holds more
		{20, time.Minute, 5200 * time.Millisecond},
	} {
		if got := m.longest(c.limit, c.most, end); got != c.want {
			t.Errorf("longest(%v, %v) = %v, want %v", c.limit, c.most, got, c.want)
		}
	}
}

// TestHedgeWindowConfirmed: a fixed window of 40 a 2 s, its cut hedged
// at 20 a second (a window of it, or a ban), climbed to 27.6 a second and
// was refused 1.24 s on, having taken 34: no more than such a window lets
// through, and a ban's window would have let the pace through. The cut
// goes a little under the window's rate, not a tenth under the probe;
// with more taken than the window allows, the probe's own measure stands.
func TestHedgeWindowConfirmed(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.rtt = 27.6, 50*ms
	h := hedge{rate: 20, window: 2420 * ms, back: 36}
	e.ep = epoch{start: at(6320 * ms), admitted: 34, refused: 1, answers: 35, nays: 1, sends: 35, sent: 35}
	cut := pending{at: at(7560 * ms), sentRate: 27.6, rate: 27.6, n: 1, hedge: h}
	if next, _ := e.bounded(at(7810*ms), cut); next < 18.5 || next > 19.5 {
		t.Errorf("refused within the window's allowance: next %.2f/s, want 19/s", next)
	}
	e.ep = epoch{start: at(2 * time.Second), admitted: 170, refused: 1, answers: 171, nays: 1, sends: 171, sent: 171}
	if next, _ := e.bounded(at(7810*ms), cut); next < 24 {
		t.Errorf("refused past the window's allowance: next %.2f/s, want a tenth under 27.6/s", next)
	}
}
