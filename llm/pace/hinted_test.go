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
