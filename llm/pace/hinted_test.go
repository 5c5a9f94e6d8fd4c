package pace

import (
	"math"
	"testing"
	"time"
)

// TestEstimatorHintedOpening: the first refusal of all, with a hint far
// longer than the opening took to spend the window (a minute's window
// spent in a quarter second, a penalty box's ban), cuts the pace to what
// the server took over the hint, not over the first second (which, a
// quarter of it at most, left the pace sixty times over and cost a ban
// a minute); and the search climbs no further than that rate. Requests
// still in flight when the hold ends count as taken. A short hint, one
// for a request bigger than most, or one whose headers told the window
// (the tracker follows it) leaves the first second's measure.
func TestEstimatorHintedOpening(t *testing.T) {
	opening := func(hint time.Duration, big float64, answered bool) estimator {
		e := newEstimator(math.Inf(1), true, t0)
		for i := range 24 {
			sent := time.Duration(i) * 10 * time.Millisecond
			e.sent(1)
			if answered {
				e.admitted(at(sent+10*time.Millisecond), at(sent), 1)
			}
		}
		e.sent(big)
		hold := e.refused(at(250*time.Millisecond), at(250*time.Millisecond), big, hint)
		e.tick(at(250*time.Millisecond + hold))
		return e
	}
	for _, answered := range []bool{true, false} {
		e := opening(time.Minute, 1, answered)
		if want := cutTo * 24 / 60; math.Abs(e.pace()-want) > 1e-9 || e.bad != 0.4 {
			t.Errorf("answered %v: pace %v and bad %v after a refusal with a minute's hint, want %v and 0.4", answered, e.pace(), e.bad, want)
		}
	}
	e := opening(time.Minute, 1, true)
	for range 8 { // spans held at the pace: it climbs to the rate, and holds there
		start := e.ep.start
		for i := range 24 {
			sent := start.Add(time.Duration(i) * time.Duration(float64(time.Second)/e.pace()))
			e.sent(1)
			e.admitted(sent.Add(10*time.Millisecond), sent, 1)
		}
		e.tick(start.Add(e.span))
	}
	if e.pace() > 0.4 {
		t.Errorf("pace %v after spans held, want 0.4 at most: above it the server refused", e.pace())
	}
	short := opening(time.Second, 1, true)
	big := opening(time.Minute, 100, true)
	shown := newEstimator(math.Inf(1), true, t0)
	shown.shown = true
	for i := range 24 {
		shown.sent(1)
		shown.admitted(at(time.Duration(i)*10*time.Millisecond+10*time.Millisecond), at(time.Duration(i)*10*time.Millisecond), 1)
	}
	shown.sent(1)
	shown.tick(at(250*time.Millisecond + shown.refused(at(250*time.Millisecond), at(250*time.Millisecond), 1, time.Minute)))
	for name, e := range map[string]estimator{"a second's hint": short, "a big request's": big, "a told window's": shown} {
		if e.pace() < 1 {
			t.Errorf("%s: pace %v, want the first second's measure", name, e.pace())
		}
	}
}

// TestEstimatorStepWorthItsHold: held just under a rate refused, the pace
// steps up towards it only once the step would have won, since the
// refusal, what the refusal's hold cost: a second's ban against a step of
// 2.5% waits 40 s, a quarter second's hold 10 s. (Each refused step into
// a penalty box cost a whole ban: four in a 30 s run made it 1.16x.)
func TestEstimatorStepWorthItsHold(t *testing.T) {
	for _, tc := range []struct {
		cost, want time.Duration
	}{{time.Second, 40 * time.Second}, {250 * time.Millisecond, 10 * time.Second}} {
		e := estimator{ceil: math.Inf(1), adapt: true, rate: 20, good: 20, bad: 21, span: 2 * time.Second,
			patience: firstPatience, cost: tc.cost, costAt: t0, ep: epoch{start: t0, judged: t0}}
		var stepped time.Duration
		for s := time.Duration(0); stepped == 0 && s < time.Minute; s += e.span {
			for i := range 40 {
				sent := at(s + time.Duration(i)*50*time.Millisecond)
				e.sent(1)
				e.admitted(sent.Add(10*time.Millisecond), sent, 1)
			}
			if e.tick(at(s + e.span)); e.pace() != 20 {
				stepped = s + e.span
			}
		}
		if stepped < tc.want || stepped > tc.want+e.span || e.pace() != 20.5 {
			t.Errorf("a refusal costing %v: stepped up to %v at %v, want to 20.5 at %v", tc.cost, e.pace(), stepped, tc.want)
		}
	}
}

// TestEstimatorFineOpening: the first refusal of all, its fine hint
// covering the rest of the first second, measures the server's rate (it
// let no more through in that second): the climb from it starts with a
// small step, not the doubling search's big one from a guess. A coarse
// hint (a whole second) may say much less than it covers.
func TestEstimatorFineOpening(t *testing.T) {
	for _, fine := range []bool{true, false} {
		e := newEstimator(math.Inf(1), true, t0)
		e.fine = fine
		for i := range 20 {
			sent := at(time.Duration(i) * 12 * time.Millisecond)
			e.sent(1)
			e.admitted(sent.Add(10*time.Millisecond), sent, 1)
		}
		e.sent(1)
		e.tick(at(250*time.Millisecond + e.refused(at(250*time.Millisecond), at(250*time.Millisecond), 1, time.Second)))
		start := e.ep.start
		for i := range 2 * 20 {
			sent := start.Add(time.Duration(i) * 50 * time.Millisecond)
			e.sent(1)
			e.admitted(sent.Add(10*time.Millisecond), sent, 1)
		}
		e.tick(start.Add(e.span))
		if want := map[bool]float64{true: 21, false: 28}[fine]; math.Abs(e.pace()-want) > 1e-9 {
			t.Errorf("fine %v: pace %v after a span held at 20, want %v", fine, e.pace(), want)
		}
	}
}

// TestEstimatorBackToHeld: refused soon after a small step over a pace
// held for a span, the pace goes back to that pace, not a tenth under the
// rate refused: the limit lies between the two (a penalty box refusing
// at 21 what it took at 20 a second had the lane at 18.9 for 20 s).
func TestEstimatorBackToHeld(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 21, good: 20, span: 2 * time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	for i := range 14 {
		sent := at(time.Duration(i) * 50 * time.Millisecond)
		e.sent(1)
		e.admitted(sent.Add(10*time.Millisecond), sent, 1)
	}
	e.sent(1)
	e.tick(at(700*time.Millisecond + e.refused(at(700*time.Millisecond), at(700*time.Millisecond), 1, 0)))
	if e.pace() != 20 || e.bad != 21 || e.good != 20 {
		t.Errorf("pace %v, bad %v, good %v; want back to 20, 21 refused, 20 held", e.pace(), e.bad, e.good)
	}
}

// TestEstimatorOpeningSlowAnswers: the first refusal of all, its epoch's
// answers slower than the hold (latency over the window), cuts to what
// the first second sent and the server did not refuse, not going on with
// no pace (which cost four more refusals in a second and a half); unless
// the refusal's headers told the window, which the tracker follows.
func TestEstimatorOpeningSlowAnswers(t *testing.T) {
	for _, shown := range []bool{false, true} {
		e := newEstimator(math.Inf(1), true, t0)
		e.shown = shown
		for range 16 {
			e.sent(1) // in flight: answered in 1.5 s
		}
		e.sent(1)
		e.tick(at(500*time.Millisecond + e.refused(at(500*time.Millisecond), at(500*time.Millisecond), 1, 0)))
		switch p := e.pace(); {
		case shown && !math.IsInf(p, 1):
			t.Errorf("window told: pace %v, want none yet", p)
		case !shown && (p > 16 || p < 0.9*16):
			t.Errorf("pace %v, want a little under the 16 sent and not refused", p)
		}
	}
}

// TestEstimatorOpeningAnswersSlow: the first refusal of all, enough of
// its epoch answered by the hold's end but the successes slower than the
// hold (latency 1.5 s, a hold of one second): what the server admitted by
// then is only what went in the first quarter second, and what was sent
// and not refused is what it took. (A sliding counter of 20 a second so
// measured 4 admitted a second, the pace cut to a quarter of what was
// sent, and the run took 1.17-1.44x in one run of three.)
func TestEstimatorOpeningAnswersSlow(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	for range 26 {
		e.sent(1) // 26 in 0.75 s
	}
	refusedAt := at(750 * time.Millisecond)
	var hold time.Duration
	for range 6 {
		hold = e.refused(refusedAt, refusedAt, 1, 0)
	}
	for i := range 4 { // those sent in the first quarter second, answered 1.5 s later
		sent := at(time.Duration(i) * 50 * time.Millisecond)
		e.admitted(sent.Add(1500*time.Millisecond), sent, 1)
	}
	if hold >= 1500*time.Millisecond {
		t.Fatalf("hold %v: want one shorter than the answers", hold)
	}
	e.tick(refusedAt.Add(hold))
	if p := e.pace(); p < 0.9*20 || p > 20 {
		t.Errorf("pace %.2f, want the 20 sent and not refused, over a second", p)
	}
}

// TestEstimatorCoarseHintCost: a refusal's hint of one whole second costs
// the lane, once a pace has held, the quarter second of its own hold
// (see coarse), and the steps up weigh that; a fine one costs itself.
func TestEstimatorCoarseHintCost(t *testing.T) {
	for _, fine := range []bool{false, true} {
		e := estimator{ceil: math.Inf(1), adapt: true, rate: 20, span: time.Second, patience: firstPatience, fine: fine, ep: epoch{start: t0, judged: t0}}
		e.sent(1)
		e.refused(at(time.Second), at(time.Second), 1, time.Second)
		if want := map[bool]time.Duration{false: quickHold, true: time.Second}[fine]; e.cost != want {
			t.Errorf("fine %v: a refusal's cost %v, want %v", fine, e.cost, want)
		}
	}
}

// TestEstimatorProbeAtToldHeld: told the limit, a probe at it (the rate
// last refused, which no pace may pass) that holds a span says little: a
// pace 2% over what the server admits takes seconds to be refused. It
// neither forgets the refusal nor the patience that failed probes grew,
// so the next refusal there makes probes rarer still. (Forgetting them,
// a sliding counter refused every probe of a 30 s run, each 10 s apart.)
func TestEstimatorProbeAtToldHeld(t *testing.T) {
	e := estimator{ceil: 20, adapt: true, rate: 20, good: 19.5, bad: 20, span: time.Second, patience: 2 * firstPatience,
		probing: true, ep: epoch{start: t0, judged: t0}}
	for i := range 20 {
		sent := at(time.Duration(i) * 50 * time.Millisecond)
		e.sent(1)
		e.admitted(sent.Add(10*time.Millisecond), sent, 1)
	}
	e.tick(at(time.Second))
	if e.pace() != 20 || e.bad != 20 || e.patience != 2*firstPatience {
		t.Fatalf("pace %v, bad %v, patience %v after the probe held a span; want 20, 20 and %v kept", e.pace(), e.bad, e.patience, 2*firstPatience)
	}
	e.sent(1)
	e.tick(at(1100*time.Millisecond + e.refused(at(1100*time.Millisecond), at(1100*time.Millisecond), 1, 0)))
	if e.patience != 4*firstPatience {
		t.Errorf("patience %v after the probe was refused, want it doubled to %v", e.patience, 4*firstPatience)
	}
}

// TestEstimatorProbeWorthGrows: a probe at the rate last refused waits,
// as a step does, until what it would have won since the last refusal
// pays for one, and for as many more as its patience has doubled: each
// probe refused costs a hold, and the next waits twice as long.
func TestEstimatorProbeWorthGrows(t *testing.T) {
	for _, tc := range []struct {
		patience int
		want     time.Duration // a quarter second's hold over a gain of 1/39
	}{{firstPatience, 9750 * time.Millisecond}, {2 * firstPatience, 19500 * time.Millisecond}} {
		e := estimator{ceil: math.Inf(1), adapt: true, rate: 19.5, good: 19.5, bad: 20, span: time.Second, patience: tc.patience,
			held: maxPatience, sinceProbe: maxProbeWait, cost: quickHold, costAt: t0}
		if got := e.up(t0.Add(tc.want - 100*time.Millisecond)); got != 19.5 {
			t.Errorf("patience %v: probed at %v before %v", tc.patience, got, tc.want)
		}
		if got := e.up(t0.Add(tc.want + 10*time.Millisecond)); got != 20 {
			t.Errorf("patience %v: pace %v at %v, want the probe at 20", tc.patience, got, tc.want)
		}
	}
}
