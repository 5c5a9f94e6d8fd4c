package pace

import (
	"math"
	"testing"
	"time"
)

// TestSlowAnswersSpan: an answer of 3 s makes a span of a round trip and
// two seconds (5 s), time for the answers to come and two seconds of them
// to measure by, not two round trips (6 s); one of 1.5 s still makes two
// (3 s), one of 300 ms the least span of a second, and one of 90 s the
// most span, a minute.
func TestSlowAnswersSpan(t *testing.T) {
	for _, c := range []struct{ took, want time.Duration }{
		{3 * time.Second, 5 * time.Second},
		{1500 * time.Millisecond, 3 * time.Second},
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

// TestSlowAnswersStepUp: at 3 requests a second, answers 3 s late, a
// pace held a span of 5 s without a refusal steps up, though only the
// requests of its first two seconds have been answered (7 of the 8 an
// epoch must hear): the others, in flight for longer than a refusal takes to
// come back, were not refused. So for a pace of tokens, 1,000 a request,
// whose refusals take 100 ms: those sent within that are counted as
// requests, not as units. (Waiting for their answers, each step of a
// leaky bucket's 10 a second answered 3 s late took 6 s, and the run
// 1.38x.)
func TestSlowAnswersStepUp(t *testing.T) {
	for _, c := range []struct {
		n    float64
		trip time.Duration
	}{{1, 0}, {1000, 100 * time.Millisecond}} {
		e := newEstimator(math.Inf(1), true, t0)
		e.sent(c.n)
		e.refused(at(c.trip), t0, c.n, 0) // a refusal: its round trip is known
		e.tick(at(time.Second))
		e.shift(at(time.Second), 3*c.n)
		start := time.Second
		var steps []step
		for i := range 16 {
			sent := start + time.Duration(i)*time.Second/3
			steps = append(steps, step{what: "send", n: c.n})
			if answered := sent + 3*time.Second; answered <= start+5100*time.Millisecond {
				steps = append(steps, step{what: "ok", send: sent, seen: answered, n: c.n})
			}
		}
		play(&e, append(steps, step{what: "tick", seen: start + 5100*time.Millisecond}))
		if e.ep.answers >= minAnswers {
			t.Fatalf("%d answers heard, want fewer than %d", e.ep.answers, minAnswers)
		}
		if e.pace() <= 3*c.n || e.good != 3*c.n {
			t.Errorf("%v a request: pace = %v, held %v, after a span held at %v, want a step over it", c.n, e.pace(), e.good, 3*c.n)
		}
	}
}
