package pace

import (
	"math"
	"testing"
	"time"
)

// TestSlowAnswersSpan: an answer of 3 s makes a span of a round trip and
// a second (4 s), time for the answers to come and a second's worth of
// them to measure by, not two round trips (6 s); one of 300 ms still
// makes two (600 ms, under the least span of a second), and one of 90 s
// the most span, a minute.
func TestSlowAnswersSpan(t *testing.T) {
	for _, c := range []struct{ took, want time.Duration }{
		{3 * time.Second, 4 * time.Second},
		{300 * time.Millisecond, minSpan},
		{90 * time.Second, maxSpan},
	} {
		e := newEstimator(math.Inf(1), true, t0)
		e.admitted(at(c.took), t0, 1)
		if e.span != c.want {
			t.Errorf("answered after %v: span = %v, want %v", c.took, e.span, c.want)
		}
	}
}

// TestSlowAnswersStepUp: at 3 a second, answers 3 s late, a pace held a
// span of 4 s without a refusal steps up, though only the requests of
// its first second have been answered (4 of the 8 an epoch must hear):
// the others, in flight for longer than a refusal takes to come back,
// were not refused. (Waiting for their answers, each step of a leaky
// bucket's 10 a second answered 3 s late took 6 s, and the run 1.38x.)
func TestSlowAnswersStepUp(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.sent(1)
	e.refused(t0, t0, 1, 0) // a refusal, at once: its round trip is known
	e.tick(at(quickHold))
	e.shift(at(time.Second), 3)
	start := time.Second
	var steps []step
	for i := range 13 {
		sent := start + time.Duration(i)*time.Second/3
		steps = append(steps, step{what: "send", n: 1})
		if answered := sent + 3*time.Second; answered <= start+4100*time.Millisecond {
			steps = append(steps, step{what: "ok", send: sent, seen: answered, n: 1})
		}
	}
	play(&e, append(steps, step{what: "tick", seen: start + 4100*time.Millisecond}))
	if e.ep.answers >= minAnswers {
		t.Fatalf("%d answers heard, want fewer than %d", e.ep.answers, minAnswers)
	}
	if e.pace() <= 3 || e.good != 3 {
		t.Errorf("pace = %v, held %v, after a span held at 3, want a step over it", e.pace(), e.good)
	}
}
