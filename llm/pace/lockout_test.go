package pace

import (
	"math"
	"testing"
	"time"
)

// TestEstimatorLockout: a server that refuses everything for many seconds
// with no hint (a minute's window spent) stretches the span over the run,
// and once cut in it, its refusals until something is admitted cut no
// more: each holds a span instead. Cut after cut at a second's span, the
// pace fell from 1,440 to 2 a minute before the window ended.
func TestEstimatorLockout(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	ms := time.Millisecond
	play(&e, cat(repeat(24, 0, step{what: "send", n: 1}), repeat(24, 0, step{what: "ok", seen: 50 * ms, n: 1})))
	var first float64
	var holds []time.Duration
	for i := range 40 {
		sent := 250*ms + time.Duration(i)*500*ms // refused all along, 0.25 s to 20 s
		e.sent(1)
		holds = append(holds, e.refused(at(sent+50*ms), at(sent), 1, 0))
		e.tick(at(sent + 400*ms))
		if sent == 3*time.Second {
			first = e.pace()
		}
	}
	if e.span < 15*time.Second {
		t.Errorf("span %v after 20 s refused all along, want it stretched over the run", e.span)
	}
	if e.pace() < first {
		t.Errorf("pace %v after the lockout went on, %v at 3 s: cut again in the same run", e.pace(), first)
	}
	if last := holds[len(holds)-1]; last < 15*time.Second {
		t.Errorf("the last refusal holds %v, want a span", last)
	}
}
