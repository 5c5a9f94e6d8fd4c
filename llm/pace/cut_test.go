package pace

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestEstimatorHoldAfterLockout: once an epoch after a cut admits nothing
// (a server that counts refused requests keeps a client that pushes on
// locked out), the hold without a hint is a whole span.
func TestEstimatorHoldAfterLockout(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 10, bad: 12, span: 4 * time.Second, patience: 2, ep: epoch{start: t0, judged: t0}}
	if hold := e.refused(at(100*time.Millisecond), t0, 1, 0); hold != 250*time.Millisecond {
		t.Fatalf("first hold = %v, want 250ms", hold)
	}
	e.refused(at(110*time.Millisecond), t0, 1, 0)
	e.refused(at(120*time.Millisecond), t0, 1, 0)
	e.tick(at(time.Second)) // decides: three refusals, nothing admitted
	e.sent(1)
	if hold := e.refused(at(1100*time.Millisecond), at(time.Second), 1, 0); hold != e.span {
		t.Errorf("hold after a lockout = %v, want the span %v", hold, e.span)
	}
	if hold := (&estimator{adapt: true, rate: 1, ep: epoch{start: t0}}).refused(at(time.Second), t0, 1, 3*time.Second); hold != 3*time.Second {
		t.Errorf("hold with a hint of 3s = %v, want the hint", hold)
	}
}

// TestEstimatorNoiseClimbs: once refusals are known to come whatever the
// pace, an epoch that used its pace climbs although it ended in one, so a
// flaky gateway does not freeze the pace where its first refusals left it.
func TestEstimatorNoiseClimbs(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 10, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	now := t0
	var paces []float64
	for range 12 {
		// An epoch at the pace, for two spans, one request in ten refused.
		n := int(2 * e.pace())
		for i := range n {
			sent := now.Add(time.Duration(i) * 2 * time.Second / time.Duration(n))
			e.sent(1)
			if i%10 == 9 {
				e.refused(sent.Add(5*time.Millisecond), sent, 1, 0)
			} else {
				e.admitted(sent.Add(5*time.Millisecond), sent, 1)
			}
		}
		now = now.Add(2 * time.Second)
		e.tick(now)
		paces = append(paces, e.pace())
	}
	low := slices.Min(paces)
	if last := paces[len(paces)-1]; last <= low*1.2 {
		t.Errorf("paces against one refusal in ten whatever the pace = %v, want them to climb back from %v", paces, low)
	}
}

// TestEstimatorCuts: how deep a refusal episode cuts.
func TestEstimatorCuts(t *testing.T) {
	inf := math.Inf(1)
	// episode: half a span at the pace, the last quarter of it refused,
	// then the tick that decides once the hold is over: a refusal too
	// soon after the epoch began for its measure to say anything.
	episode := func(e *estimator, start time.Time) time.Time {
		n := int(e.pace() / 2)
		for i := range n {
			sent := start.Add(time.Duration(i) * 500 * time.Millisecond / time.Duration(n))
			e.sent(1)
			if i < n*3/4 {
				e.admitted(sent.Add(10*time.Millisecond), sent, 1)
			} else {
				e.refused(sent.Add(10*time.Millisecond), sent, 1, 0)
			}
		}
		end := start.Add(time.Second)
		e.tick(end)
		return end
	}
	t.Run("cuts in a row, much refused, go deeper", func(t *testing.T) {
		e := estimator{ceil: inf, adapt: true, rate: 40, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
		now := episode(&e, t0)
		first := e.pace() // 0.9 of 40
		episode(&e, now)
		if want := 0.8 * first; math.Abs(e.pace()-want) > 0.01 {
			t.Errorf("after a cut of 40 to %v, the next cut = %v, want a fifth off, %v", first, e.pace(), want)
		}
	})
	t.Run("mostly refused before answers enough: halved", func(t *testing.T) {
		e := newEstimator(10, true, t0)
		e.drained = true // the opening's drain is TestEstimatorOpeningDrains'
		play(&e, cat(repeat(4, 0, step{what: "send", n: 1}),
			[]step{{what: "ok", seen: 10 * time.Millisecond, n: 1}},
			repeat(3, 0, step{what: "refused", seen: 20 * time.Millisecond, n: 1}),
			[]step{{what: "tick", seen: 400 * time.Millisecond}}))
		if e.pace() != 5 {
			t.Errorf("pace = %v, want 5", e.pace())
		}
	})
	t.Run("one refusal alone, before answers enough: no halving, a share of one says nothing", func(t *testing.T) {
		e := newEstimator(10, true, t0)
		play(&e, []step{{what: "send", n: 1}, {what: "send", n: 1}, {what: "refused", seen: 20 * time.Millisecond, n: 1},
			{what: "tick", seen: 400 * time.Millisecond}})
		if e.pace() != 10 {
			t.Errorf("pace = %v, want 10", e.pace())
		}
	})
	t.Run("two refused of three, before answers enough: no halving, noise does that by chance", func(t *testing.T) {
		e := newEstimator(10, true, t0)
		play(&e, cat(repeat(3, 0, step{what: "send", n: 1}),
			[]step{{what: "ok", seen: 10 * time.Millisecond, n: 1}},
			repeat(2, 0, step{what: "refused", seen: 20 * time.Millisecond, n: 1}),
			[]step{{what: "tick", seen: 400 * time.Millisecond}}))
		if e.pace() != 10 {
			t.Errorf("pace = %v, want 10", e.pace())
		}
	})
	t.Run("refused over a pace held, before answers enough: back to it", func(t *testing.T) {
		e := estimator{ceil: inf, adapt: true, rate: 30, good: 20, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
		play(&e, cat(sendOK(3, 30*time.Millisecond),
			[]step{{what: "refused", send: 90 * time.Millisecond, seen: 100 * time.Millisecond, n: 1}},
			[]step{{what: "tick", seen: 400 * time.Millisecond}}))
		if e.pace() != 20 || e.bad != 30 {
			t.Errorf("pace = %v, bad = %v; want 20, 30", e.pace(), e.bad)
		}
	})
	t.Run("refused all along, admitting a quarter: the long run bounds the cut", func(t *testing.T) {
		// A server that takes 5 a second of the 20 sent, and, each time
		// the pace climbed back over it, lets one more epoch look held.
		e := estimator{ceil: inf, adapt: true, rate: 20, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
		now := t0
		for range 20 {
			for i := range 20 {
				sent := now.Add(time.Duration(i) * 50 * time.Millisecond)
				e.sent(1)
				if i%4 == 0 {
					e.admitted(sent.Add(10*time.Millisecond), sent, 1)
				} else {
					e.refused(sent.Add(10*time.Millisecond), sent, 1, 0)
				}
			}
			now = now.Add(time.Second)
			e.tick(now)
			e.bad, e.ep.refused, e.ep.answers = 0, 0, minAnswers // as if it climbed back and held: only the long run can tell
			e.rate = 20
		}
		// The last epoch: a burst allowance admits all but its last.
		e.shift(now, 20)
		for i := range 20 {
			sent := now.Add(time.Duration(i) * 50 * time.Millisecond)
			e.sent(1)
			if i < 19 {
				e.admitted(sent.Add(10*time.Millisecond), sent, 1)
			}
		}
		now = now.Add(time.Second)
		e.refused(now, now.Add(-10*time.Millisecond), 1, 0)
		e.tick(now.Add(300 * time.Millisecond))
		// The epoch alone says 0.95 of 19/s, and cuts in a row stop at
		// half of the 20 sent; the long run (5 a second, over the busy
		// time its holds leave) says far less.
		if e.pace() > 8 {
			t.Errorf("pace = %v, want under 8: what the long run let through", e.pace())
		}
	})
}

// oneLongRefused plays a young epoch of ten short requests admitted in its
// first 0.2 s, then one long prompt refused, and ticks at 1 s.
func oneLongRefused(e *estimator) {
	for i := range 10 {
		e.sent(60)
		sent := at(time.Duration(i) * 20 * time.Millisecond)
		e.admitted(sent.Add(50*time.Millisecond), sent, 60)
	}
	e.sent(3200)
	e.refused(at(250*time.Millisecond), at(200*time.Millisecond), 3200, 0)
	e.tick(at(time.Second))
}

// TestEstimatorShortEpochOverHeld: refused a quarter second after a step
// up from a pace held, an epoch whose refused tokens outweigh what it
// admitted (one long prompt) goes back to the pace held; it used to take
// what a quarter second admitted, over a second, for the server's rate.
func TestEstimatorShortEpochOverHeld(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 10000, good: 7000, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	oneLongRefused(&e)
	if e.pace() < 6000 {
		t.Errorf("pace = %v, want back near the pace held, 7000", e.pace())
	}
}

// TestEstimatorShortEpochOneRefusal: one long prompt refused early in an
// epoch, outweighing in tokens what it had admitted, says that the window
// was full when it came, not that the pace is far over: under a pace held
// (a step back towards the rate refused) as over one, the cut is a tenth,
// not to what the first instants admitted over a second (a sliding log of
// 10,000 tokens a second with no headers was held at 3,300 for 20 s).
func TestEstimatorShortEpochOneRefusal(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 9000, good: 9500, bad: 10500, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	oneLongRefused(&e)
	if e.pace() < 0.9*9000 {
		t.Errorf("pace = %v, want a tenth under 9,000 at most", e.pace())
	}
}

// TestEstimatorOpeningDrains: mostly refused at the first pace, nothing
// yet known of the rate, the pace does not halve: the next refusal holds
// a whole span (a server that counts what it refuses still holds the
// opening burst against the client) and what follows is judged afresh.
// Only once: mostly refused again, it halves.
func TestEstimatorOpeningDrains(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 20, span: 2 * time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	mostlyRefused := func(from time.Duration) {
		for range 4 {
			e.sent(1)
		}
		e.admitted(at(from+10*time.Millisecond), at(from), 1)
		for range 3 {
			e.refused(at(from+20*time.Millisecond), at(from), 1, 0)
		}
		e.tick(at(from + 400*time.Millisecond))
	}
	mostlyRefused(0)
	if e.pace() != 20 {
		t.Fatalf("pace after the opening's refusals = %v, want 20, not halved", e.pace())
	}
	e.sent(1)
	if hold := e.refused(at(600*time.Millisecond), at(500*time.Millisecond), 1, 0); hold != 2*time.Second {
		t.Errorf("the next refusal holds %v, want the span, 2s", hold)
	}
	e.tick(at(2700 * time.Millisecond))
	mostlyRefused(3 * time.Second)
	if e.pace() >= 20 {
		t.Errorf("mostly refused again: pace %v, want it halved", e.pace())
	}
}

// TestEstimatorDrainIsForgotten: the opening's drain (see goOn) holds a
// whole span only while nothing is known of the rate; a refusal after a
// pace has held holds a quarter second, however long ago the drain was set.
func TestEstimatorDrainIsForgotten(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 20, good: 20, span: time.Minute, patience: firstPatience, drain: true, ep: epoch{start: t0, judged: t0}}
	e.sent(1)
	if hold := e.refused(at(time.Hour), at(time.Hour-time.Second), 1, 0); hold != 250*time.Millisecond {
		t.Errorf("hold = %v, want 250ms: the drain was for the opening", hold)
	}
}

// TestEstimatorNoiseMeasuredRecently: held at the told limit with a noise
// level known, each span starts a new epoch, so that whether the level
// explains a refusal is judged over recent answers, not the whole run's
// (a limit that came after hours of noise went unseen while the run's
// history outweighed it).
func TestEstimatorNoiseMeasuredRecently(t *testing.T) {
	e := newEstimator(100, true, t0)
	e.noise.level = 0.1
	now := t0
	for range 30 { // 30 spans of a second at the ceiling, one in ten refused
		for i := range 100 {
			sent := now.Add(time.Duration(i) * 10 * time.Millisecond)
			e.sent(1)
			if i%10 == 9 {
				e.refused(sent.Add(5*time.Millisecond), sent, 1, 0)
			} else {
				e.admitted(sent.Add(5*time.Millisecond), sent, 1)
			}
		}
		now = now.Add(time.Second)
		e.tick(now)
	}
	if e.ep.answers > 200 {
		t.Errorf("the epoch holds %d answers after 30 spans held at the ceiling, want a span's", e.ep.answers)
	}
}

// TestLumpyEpochCutsLittle: an epoch at a token pace that answered less
// than minAnswers of its biggest request (short prompts admitted, two long
// ones refused 0.7 s in) measures nothing of the rate: its refusal cuts a
// tenth or so, not to a quarter by what the short ones alone came to.
func TestLumpyEpochCutsLittle(t *testing.T) {
	for _, ceil := range []float64{4000, math.Inf(1)} {
		rate := 3800.0
		e := estimator{ceil: ceil, adapt: true, rate: rate, bad: 3900, downs: 1, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
		for i := range 35 { // 35 short prompts of 75 tokens in 0.7 s
			sent := at(time.Duration(i) * 20 * time.Millisecond)
			e.sent(75)
			e.admitted(sent.Add(50*time.Millisecond), sent, 75)
		}
		for i, n := range []float64{2400, 4300} {
			sent := at(700*time.Millisecond + time.Duration(i)*90*time.Millisecond)
			e.sent(n)
			e.refused(sent, sent, n, 0)
		}
		e.tick(at(3 * time.Second))
		if got := e.pace(); got < 0.75*rate {
			t.Errorf("ceil %v: pace after a lumpy epoch's refusal = %.0f, want a tenth or two under %.0f", ceil, got, rate)
		}
	}
}

// TestDeepCutKeepsGood: cuts in a row deepen where much is refused, but
// no deeper than a little under the rate last held for a span: with
// answers slower than refusals, an epoch's one answer was a refusal, and
// cut after cut at 1597/min took the pace to half of it, 798/min, under
// the 1200/min a GCRA had held for a span (answered in 1.5 s, 1.17x).
func TestDeepCutKeepsGood(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 1597.0 / 60, good: 20, bad: 1597.0 / 60, downs: 3,
		span: 3 * time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	e.sent(1)
	hold := e.refused(at(10*time.Millisecond), t0, 1, 0)
	e.tick(at(10*time.Millisecond + hold))
	if got := e.pace() * 60; got < cutTo*1200-1 || got >= 1597 {
		t.Errorf("after a fourth cut in a row, its epoch's one answer a refusal, the pace is %.0f/min; want %.0f/min (a little under the 1200/min held), not under",
			got, cutTo*1200)
	}
}
