package pace

import (
	"math"
	"testing"
	"time"
)

// TestSearchBetweenHalves: a pace reached by a step up and held for a
// span, stepped up again and refused before the next span said anything,
// goes back to the pace held, and the rate lies anywhere between the two:
// the climb back halves the gap as rates go, each step a search's, where a
// twentieth a step took the real nginx's 10 a second from 336/min back to
// 535/min in 12 s. A pace held that a cut measured is likely near the
// server's rate, and a refusal that cost a ban is dear: both keep the
// small steps (HAProxy's sliding second, counting what it refuses, held at
// its rate measured and probed halfway up: 1.06x -> 1.11x).
func TestSearchBetweenHalves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		climbed bool          // the pace held was a step up, not a cut's measure
		hold    time.Duration // the refusal's hold, its cost
		want    func(good, bad float64) float64
	}{
		{"a quick hold", true, quickHold, func(good, bad float64) float64 { return math.Sqrt(good * bad) }},
		{"a measure held", false, quickHold, func(good, bad float64) float64 { return good * 1.05 }},
		{"a ban", true, 2 * time.Second, func(good, bad float64) float64 { return good * 1.05 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEstimator(math.Inf(1), true, t0)
			e.rate, e.good, e.goodFor, e.climbs = 10, 5.6, time.Second, 3 // 5.6/s held, then up to 10/s
			e.climbed, e.goodClimbed = true, tc.climbed
			e.ep = epoch{start: t0, judged: t0}
			for range 2 {
				e.sent(1)
			}
			e.refused(at(200*time.Millisecond), at(190*time.Millisecond), 1, tc.hold)
			e.tick(e.cut.decideAt)
			if e.rate != 5.6 || e.bad != 10 {
				t.Fatalf("after the refusal: pace %.2f, refused %.2f; want the pace held, 5.6, and 10", e.rate, e.bad)
			}
			want := tc.want(5.6, 10)
			if next := e.up(at(60 * time.Second)); math.Abs(next-want) > 1e-9 {
				t.Errorf("the next step: %.3f, want %.3f", next, want)
			}
		})
	}
}
