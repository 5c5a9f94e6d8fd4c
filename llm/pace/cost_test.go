package pace

import (
	"math"
	"testing"
	"time"
)

// TestDrainCost: the drain's whole span (see goOn) holds the lane, but is
// charged to the next step up as the quarter second the next refusal
// holds: a step of a twentieth is worth it 5 s later, not 20 s. A refusal
// with a hint of its own is charged its hint.
func TestDrainCost(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.drain = 20, true // a pace from the opening's measure, nothing held yet
	e.stretch(time.Second)
	e.sent(1)
	if hold := e.refused(at(time.Second), at(time.Second), 1, 0); hold != time.Second {
		t.Fatalf("the drain's refusal holds %v, want the span (1s)", hold)
	}
	if e.cost != quickHold {
		t.Errorf("the drain's refusal costs %v, want %v", e.cost, quickHold)
	}
	if !e.worth(at(6*time.Second+time.Millisecond), 1.05*e.rate) {
		t.Errorf("a step of a twentieth 5 s after the drain's refusal is not worth it")
	}

	e = newEstimator(math.Inf(1), true, t0)
	e.rate, e.drain = 20, true
	e.sent(1)
	if hold := e.refused(at(time.Second), at(time.Second), 1, 3*time.Second); hold != 3*time.Second || e.cost != 3*time.Second {
		t.Errorf("a refusal hinting 3 s holds %v, costs %v; want 3s, 3s", hold, e.cost)
	}
}
