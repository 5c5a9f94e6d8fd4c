package pace

import (
	"math"
	"testing"
	"time"
)

// A ban after a window's worth (rate-limiter-flexible's blockDuration): 20
// a second, then nothing for 2 s. Each test below undoes one mechanism
// that kept such a server from costing the run 12x its time on the real
// clock (bench/node.sh ALG=rlf-block).

func TestDryRunOutpaced(t *testing.T) {
	ms := time.Millisecond
	run := func(taken int) (float64, bool) {
		e := newEstimator(math.Inf(1), true, t0)
		for range 20 {
			e.sent(1)
		}
		refuseAt(&e, 100*ms)
		refuseAt(&e, 1600*ms)
		for range taken {
			e.sent(1)
		}
		refuseAt(&e, 3100*ms) // a run begins, after taken in 1.5 s
		refuseAt(&e, 4600*ms)
		return e.dryRate(e.cut)
	}
	// 19 taken in 1.5 s between two runs: no bucket of one request per
	// 1.5 s refills so fast; a ban's wall (19 is short of the burst of 20,
	// so afterBurst does not tell).
	if r, ok := run(19); ok {
		t.Errorf("19 taken in the 1.5 s before a run of 1.5 s: bound %.2f/s; want none", r)
	}
	// One taken: a slow bucket, bounded by one request per run.
	if r, ok := run(1); !ok || math.Abs(r-1/1.5) > 1e-9 {
		t.Errorf("one taken before a run of 1.5 s: bound %.2f/s, %v; want 0.67/s", r, ok)
	}
}

// banEpoch is an epoch at 20 a second that held 2 s at a wall from its
// start, then had 20 admitted in a second, and a refusal.
func banEpoch(longestDry time.Duration) (estimator, pending) {
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.rtt = 20, 50*time.Millisecond
	e.ep = epoch{start: t0, held: 2 * time.Second, walled: 2 * time.Second, dry: longestDry,
		sent: 23, sends: 23, admitted: 20, refused: 3, answers: 23, nays: 3}
	return e, pending{at: at(3050 * time.Millisecond), decideAt: at(3300 * time.Millisecond), sentRate: 20, rate: 20, n: 1, sent: 23, sends: 23}
}

func TestBanRefusedAtTheRateHeld(t *testing.T) {
	e, cut := banEpoch(1300 * time.Millisecond)
	next, bad := e.bracket(cut)
	// The cut is the measure over the holds (a window of 20 per 3 s would
	// be as likely), but what it refused is the rate it admitted out of
	// them: the climb goes back towards 20 a second, not 6.7.
	if next > 7 || bad < 19 {
		t.Errorf("after a ban: next %.2f, bad %.2f; want the cut under 7/s, bad at 20/s or so", next, bad)
	}
	e, cut = banEpoch(5 * time.Second) // a run longer than dryMost: a longer window's wall
	if _, bad = e.bracket(cut); bad > 7 {
		t.Errorf("after a wall of 5 s: bad %.2f; want the measure over the holds, 6.7/s", bad)
	}
}

func TestKeptUpBoundsTheMeasure(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.full.burst = 20
	for i := range 300 { // 10 a second for 24 s, then 20 a second for 6 s
		d := time.Duration(i) * 100 * time.Millisecond
		e.long.got.add(at(d), 1)
		if i >= 240 {
			e.long.got.add(at(d+50*time.Millisecond), 1)
		}
	}
	cut := pending{at: at(30 * time.Second), took: 360, since: 30 * time.Second, between: 30 * time.Second, n: 1}
	next, bad := e.measuredCut(cut, 19.7, 20.7)
	// Taken since the refusal before: 12/s. Kept up the last 6 s: 20/s,
	// which a burst of 20 (two, at a fixed window's edge) accounts for
	// but (120 - 40) / 6 s, 13.3/s, at least.
	if next < 12 || bad != 20.7 {
		t.Errorf("after 6 s at 20/s: next %.2f, bad %.2f; want 0.95 x 13.3/s, bad unchanged", next, bad)
	}
}

func TestUsedLeavesHoldsOut(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.rate = 10
	e.ep = epoch{start: t0, held: 2 * time.Second, walled: 2 * time.Second, sent: 9, sends: 9, biggest: 1}
	if !e.used(at(3 * time.Second)) {
		t.Errorf("10 sent in the second not held at a wall of 3 s at 10/s: not used, want used")
	}
}

func TestFarUnderStepsHalfway(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.good, e.bad, e.cost, e.costAt = 6, 6, 19, quickHold, t0
	if next := e.up(at(10 * time.Second)); math.Abs(next-math.Sqrt(6*19)) > 1e-9 {
		t.Errorf("from 6/s, refused at 19/s: next %.2f, want %.2f", next, math.Sqrt(6*19))
	}
	e.rate, e.good, e.climbs = 12, 12, 0 // within farUnder: the small first step
	if next := e.up(at(10 * time.Second)); next > 12*1.06 {
		t.Errorf("from 12/s, refused at 19/s: next %.2f, want a step of 5%%", next)
	}
}

func TestWallHoldCharges(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.cost, e.costAt = quickHold, t0
	e.wallHold(at(1300*time.Millisecond), 1300*time.Millisecond, 1)
	if want := 2300 * time.Millisecond; e.cost != want {
		t.Errorf("cost after a hold at a wall 1.3 s into the episode: %v, want %v", e.cost, want)
	}
}

// TestBanRunNotCutAgain: a ban of 2 s after 20 a second, on the real
// clock: the burst before the first refusal of all counted 21, the window
// before this run 20, so the run is not one after a whole burst (see
// afterBurst). But the server took 20 in the 2.05 s since the refusal
// before, which no bucket refilling at one request in the 0.28 s the run
// has lasted could: the refusal in the run is at a wall, held a span,
// and no new episode cuts the pace again.
func TestBanRunNotCutAgain(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.rtt, e.good, e.bad = 20, 50*ms, 20, 28
	e.full.burst, e.full.first = 21, t0
	e.full.last = fullMark{at: at(5370 * ms)}
	e.ep = epoch{start: at(6370 * ms), judged: at(6370 * ms)}
	for i := range 20 {
		sent := at(6370*ms + time.Duration(i)*50*ms)
		e.sent(1)
		e.admitted(sent.Add(50*ms), sent, 1)
	}
	e.sent(1)
	e.refused(at(7420*ms), at(7420*ms), 1, 0)
	e.tick(at(7670 * ms))
	if !e.cut.decideAt.IsZero() {
		t.Fatalf("the ban's first refusal: no cut decided by its hold's end")
	}
	cut := e.rate
	e.sent(1)
	hold := e.refused(at(7700*ms), at(7700*ms), 1, 0)
	if !e.cut.decideAt.IsZero() || hold != e.span || e.rate != cut {
		t.Errorf("a refusal 0.28 s into the ban's run: an episode %v, hold %v, pace %.2f; want none, a span, the pace cut once (%.2f)",
			!e.cut.decideAt.IsZero(), hold, e.rate, cut)
	}
}
