package pace

import (
	"math"
	"testing"
	"time"
)

// TestEstimatorToldFirstCut: told the limit, the first cut at it goes
// 2.5% under it, near enough to be settled (the next step up a probe at
// it), although answers slower than the window make what was
// admitted look less; refused again before a span holds, the cut is
// measured.
func TestEstimatorToldFirstCut(t *testing.T) {
	const told = 200.0 // tokens a second
	e := newEstimator(told, true, t0)
	// 150 s at the pace, answers taking 30 s: two long prompts refused
	// at the end, when only the first 120 s are back.
	for range 150 {
		e.sent(told)
	}
	for i := range 120 {
		sent := at(time.Duration(i) * time.Second)
		e.admitted(sent.Add(30*time.Second), sent, told)
	}
	for _, s := range []time.Duration{148 * time.Second, 149 * time.Second} {
		e.refused(at(149*time.Second), at(s), 2*told, 0)
	}
	e.tick(at(150 * time.Second)) // the hold is over: decided
	if want := 0.975 * told; math.Abs(e.pace()-want) > 1e-9 || e.pace() < nearBad*e.bad {
		t.Fatalf("pace after the first cut at the told limit = %v (refused %v), want 2.5%% under it, %v, settled", e.pace(), e.bad, want)
	}
	// Refused again at once: measured, well under.
	for i := range 20 {
		e.sent(told)
		sent := at(150*time.Second + time.Duration(i)*100*time.Millisecond)
		if i%2 == 0 {
			e.refused(sent.Add(10*time.Millisecond), sent, told, 0)
		} else {
			e.admitted(sent.Add(10*time.Millisecond), sent, told)
		}
	}
	e.tick(at(165 * time.Second))
	if e.pace() >= cutLeast*cutLeast*told {
		t.Errorf("pace after a second cut in a row = %v, want it measured, under %v", e.pace(), cutLeast*cutLeast*told)
	}
}

// TestEstimatorToldNotHalvedBeforeAnswers: told the limit or not,
// refusals that come before any answer (answers slower than the window)
// do not halve the pace, as refusals of most of what was sent would: a
// refusal comes back at once, and what is not refused is on its way.
func TestEstimatorToldNotHalvedBeforeAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		ceil float64
		want float64
	}{
		{"told: the pace the user gave", 10, 10},
		{"told nothing: the pace found", math.Inf(1), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := estimator{ceil: tc.ceil, adapt: true, rate: 10, span: time.Minute, patience: firstPatience, drained: true, ep: epoch{start: t0, judged: t0}}
			for range 50 {
				e.sent(1) // 50 sent, none answered yet
			}
			e.refused(at(5*time.Second), at(4*time.Second), 1, 0)
			e.refused(at(5*time.Second), at(4*time.Second), 1, 0)
			e.tick(at(6 * time.Second))
			if e.pace() != tc.want {
				t.Errorf("pace = %v, want %v", e.pace(), tc.want)
			}
		})
	}
}

// TestToldShortLengthGuard: told 20 a second of a window of 6 whose
// resets are whole seconds, a unit stays 0.3 s, and the guard is a
// fiftieth of that: 0.306 s (0.32 s paced the lane at 1.06x). Told 12 a
// second, the length is half the resets, as a sliding counter's may be,
// and keeps their guard; told 6, the length is the reset's.
func TestToldShortLengthGuard(t *testing.T) {
	for _, c := range []struct {
		told float64
		want time.Duration
	}{{20, 306 * time.Millisecond}, {12, 520 * time.Millisecond}, {6, 1020 * time.Millisecond}} {
		w := &window{limit: 6, base: 6, period: time.Second, told: c.told}
		if got := w.span(); got != c.want {
			t.Errorf("told %v a second: span %v, want %v", c.told, got, c.want)
		}
	}
}
