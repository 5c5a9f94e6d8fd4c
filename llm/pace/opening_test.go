package pace

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// counted is what a sliding counter of a minute, its fixed windows from
// the first send on, counts with the send at sends[i]: the minute before's
// sends weighed by its share still within a minute back, and this one's,
// it included.
func countedAt(sends []time.Duration, i int) float64 {
	k := sends[i] / time.Minute
	into := float64(sends[i]-k*time.Minute) / float64(time.Minute)
	n := 0.0
	for _, s := range sends[:i+1] {
		switch s / time.Minute {
		case k:
			n++
		case k - 1:
			n += 1 - into
		}
	}
	return n
}

// TestOpeningTold: told 24 a minute, until the server first answers the
// lane's sends keep every trailing minute to 24, the pace's first request
// (its burst of one) included, so that a sliding counter of the told
// minute admits them all; the first answer lifts the cap to the told
// ceiling. A limit whose margin holds a request (1,200 a minute) is paced
// at its ceiling from the first.
func TestOpeningTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{RPM: 24, Margin: 0.03, Adapt: true})
		start := time.Now()
		var sends []time.Duration
		var held []*Permit
		for range 30 {
			p, err := l.Acquire(t.Context(), "m", 0)
			if err != nil {
				t.Fatal(err)
			}
			sends, held = append(sends, time.Since(start)), append(held, p)
		}
		for i := range sends {
			if n := countedAt(sends, i); n > 24+1e-9 {
				t.Fatalf("send %d at %v: a sliding counter of 24 a minute counts %.2f", i+1, sends[i], n)
			}
		}
		held[0].Done(Outcome{Result: Admitted})
		if rpm, _ := l.Effective("m"); rpm < 23.3 || rpm > 23.31 {
			t.Errorf("answered: pace %.2f a minute, want the told ceiling 24/1.03", rpm)
		}
		for _, p := range held[1:] {
			p.Release()
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{RPM: 1200, Margin: 0.03, Adapt: true})
		if rpm, _ := l.Effective("m"); rpm < 1165 || rpm > 1165.1 {
			t.Errorf("told 1,200 a minute, not answered: pace %.2f, want the ceiling 1200/1.03", rpm)
		}
	})
}

// TestOpeningBunchMostlyRefusedPaces: the opening's first bunch, four at
// once, one admitted and three refused, is too few to measure, but the
// server holds less than a third of it at once: the pace goes to what it
// took over the hold (one a quarter second), not back to none, where the
// next four at once would all be refused; and it climbs from there at the
// doubling step. So too where the refusals' headers told the window: a
// GCRA of 5 a second with no burst, its headers a window of 5, let the
// tracker send 5 at once at each reset, 4 refused each second until the
// first answers came 3 s late (7.4% refused, 1.34x).
func TestOpeningBunchMostlyRefusedPaces(t *testing.T) {
	for _, shown := range []bool{false, true} {
		t0 := time.Unix(1000, 0)
		e := newEstimator(math.Inf(1), true, t0)
		for range 4 {
			e.sent(1)
		}
		hint := time.Duration(0)
		if shown {
			e.shown, hint = true, time.Second
		}
		var hold time.Duration
		for range 3 {
			hold = max(hold, e.refused(t0.Add(time.Millisecond), t0, 1, hint))
		}
		e.admitted(t0.Add(200*time.Millisecond), t0, 1)
		e.tick(e.cut.decideAt)
		switch {
		case shown && (math.IsInf(e.rate, 1) || e.rate < 1):
			t.Fatalf("the window told: after the bunch's hold of %v, pace %.2f/s, want one (1/s at least)", hold, e.rate)
		case !shown && (math.IsInf(e.rate, 1) || e.rate < 3.9 || e.rate > 4.1):
			t.Fatalf("after the bunch's hold of %v: pace %.2f/s, want about 4/s (one taken a quarter second)", hold, e.rate)
		}
		if f := e.factor(); f < 1.4 {
			t.Errorf("shown %v: the climb from it steps by %.2f, want the doubling step's 1.4 at least", shown, f)
		}
	}
}

// TestOpeningSparseStepsSooner: after an opening that showed no burst
// (one of a bunch admitted), each request at the pace tests it, as the
// server refuses any sent too soon after the one before: a step up waits
// for half the answers, where eight at 4 a second took 2.2 s a step
// (nginx with no burst). A pace not so opened waits for all eight.
func TestOpeningSparseStepsSooner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sparse bool
		most   time.Duration // the longest the first step may take
		least  time.Duration // the least
	}{
		{"opened with no burst", true, 1300 * time.Millisecond, 0},
		{"a cut's pace", false, 3 * time.Second, 1900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEstimator(math.Inf(1), true, t0)
			e.rate, e.climbs, e.downs, e.sparse = 4, 3, 1, tc.sparse
			e.ep = epoch{start: t0, judged: t0}
			now := t0
			for e.rate == 4 && now.Before(t0.Add(5*time.Second)) {
				now = sendAt(&e, now, now.Add(10*time.Millisecond))
			}
			if took := now.Sub(t0); e.rate == 4 || took > tc.most || took < tc.least {
				t.Errorf("pace %.2f/s after %v; want a step up in %v to %v", e.rate, took, tc.least, tc.most)
			}
		})
	}
}
