package pace

import (
	"testing"
	"time"
)

// TestOwnSecondByPhases: before the server has answered, a clump sent at
// the opening weighs at a counter of a second over the second after its
// own, so room for the next comes back as it weighs off, not at once
// when the clump leaves the own second; once the server has answered, or
// two seconds after the first send, the own second alone decides. Told
// 10,000 tokens a second and answered 1.5 s late, the opening's 7,964
// tokens and 5,651 more within 0.25 s of the first second's end counted
// 11,624 at the counter, and its refused long prompts held the window.
func TestOwnSecondByPhases(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	opening := func() *quantity {
		q := secondAt(t0, map[time.Duration]float64{0: 900}, []time.Duration{0})
		q.heard = false
		return q
	}
	at := t0.Add(time.Second)
	// A counter whose window began at 1 s weighs the 900 whole there:
	// 500 fits once 900 x (1-x) + 500 <= 1,000, x = 4/9 s.
	ok, wait := opening().inSecond(at, 500, 0, 0)
	if want := 444 * time.Millisecond; ok || wait < want || wait > want+2*time.Millisecond {
		t.Errorf("opening, at 1 s: inSecond(500) = %v, %v; want false, about %v", ok, wait, want)
	}
	if ok, _ := opening().inSecond(t0.Add(1450*time.Millisecond), 500, 0, 0); !ok {
		t.Error("opening, at 1.45 s: 500 did not fit beside the 900 weighed by 0.55")
	}
	if ok, _ := opening().inSecond(at, 100, 0, 0); !ok {
		t.Error("opening, at 1 s: 100 did not fit beside the 900 (1,000 at most at any phase)")
	}
	if ok, _ := opening().inSecond(at, 100, 50, 0); ok {
		t.Error("opening, at 1 s: 100 fitted beside the 900 and 50 going now")
	}
	heard := opening()
	heard.heard = true
	if ok, _ := heard.inSecond(at, 500, 0, 0); !ok {
		t.Error("answered: 500 did not fit at 1 s, the 900 gone from the own second")
	}
	// Two seconds after the first send the opening's burst has weighed off.
	late := opening()
	late.count += 900
	late.win.sent(t0.Add(1900*time.Millisecond), late.count)
	if ok, _ := late.inSecond(t0.Add(2900*time.Millisecond), 500, 0, 0); !ok {
		t.Error("unanswered, 2.9 s after the first send: 500 did not fit, the 900 sent at 1.9 s gone from the own second")
	}
}
