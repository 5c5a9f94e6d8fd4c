package pace

import (
	"fmt"
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

// sendAt sends at the estimator's pace from start until until, each
// request admitted 50 ms later, ticking before each send; it returns when
// the next would go. Paces stay under 20 a second, so each answer comes
// before the next send.
func sendAt(e *estimator, start, until time.Time) time.Time {
	t := start
	for t.Before(until) {
		e.tick(t)
		e.sent(1)
		e.admitted(t.Add(50*time.Millisecond), t, 1)
		if e.rate > 20 || e.rate < 0.5 {
			panic(fmt.Sprintf("pace %v at %v", e.rate, t.Sub(t0)))
		}
		t = t.Add(time.Duration(float64(time.Second) / e.rate))
	}
	return t
}

// refuseOne sends one request at t, refused at once, and returns when its
// cut is decided.
func refuseOne(e *estimator, t time.Time) time.Time {
	e.tick(t)
	e.sent(1)
	if hold := e.refused(t.Add(time.Millisecond), t, 1, 0); hold <= 0 {
		panic(fmt.Sprintf("the refusal at %v set no hold", t.Sub(t0)))
	}
	done := e.cut.decideAt
	if done.IsZero() {
		panic(fmt.Sprintf("the refusal at %v left no cut to decide", t.Sub(t0)))
	}
	e.tick(done)
	return done
}

// TestSearchGoesOnHalving: the search keeps halving, through ticks, after
// a halfway step is refused too, and a refusal at the pace held that is
// too soon to decide anything leaves it searching.
func TestSearchGoesOnHalving(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.climbs = 4, 3 // a cut's pace (not a step's), the doubling step next
	now := t0
	for e.rate == 4 { // held, and a step up
		now = sendAt(&e, now, now.Add(100*time.Millisecond))
	}
	held := e.rate
	for e.rate == held { // held, and a step further
		now = sendAt(&e, now, now.Add(100*time.Millisecond))
	}
	refusedAt := e.rate
	now = refuseOne(&e, now)
	if e.rate != held || !e.searching {
		t.Fatalf("refused at %.2f after %.2f held: pace %.2f, searching %v; want %.2f and searching", refusedAt, held, e.rate, e.searching, held)
	}
	now = refuseOne(&e, sendAt(&e, now, now.Add(300*time.Millisecond))) // at the pace held, too soon to say anything
	if e.rate != held || !e.searching {
		t.Fatalf("a refusal too soon to decide at %.2f: pace %.2f, searching %v; want it unchanged", held, e.rate, e.searching)
	}
	for _, bad := range []float64{refusedAt, math.Sqrt(held * refusedAt)} {
		for e.rate == held {
			now = sendAt(&e, now, now.Add(100*time.Millisecond))
		}
		if want := math.Sqrt(held * bad); math.Abs(e.rate-want) > 1e-9 {
			t.Fatalf("from %.2f held, %.2f refused: the step went to %.3f, want halfway, %.3f", held, bad, e.rate, want)
		}
		now = refuseOne(&e, now)
		if e.rate != held || !e.searching {
			t.Fatalf("the halfway step refused: pace %.2f, searching %v; want %.2f and searching", e.rate, e.searching, held)
		}
	}
}

// TestStepRefusedGoesBackToHeld: held at 594/min, a step to 605/min (a
// search's last, near the server's 600) refused once in its first few
// answers has measured nothing: the share refused of so few (one of
// three) is no reason to cut under the pace held, and the pace goes back
// to it. (Cut a twentieth under, 564/min, the climb back took 15 s at
// nginx's 10 a second with no burst, each time a probe was refused.)
func TestStepRefusedGoesBackToHeld(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	good := 594.0 / 60
	e.rate, e.good, e.goodFor, e.bad = 605.0/60, good, 5*time.Second, 605.0/60
	e.ep = epoch{start: t0, judged: t0}
	now := sendAt(&e, t0, t0.Add(150*time.Millisecond))
	refuseOne(&e, now)
	if math.Abs(e.rate-good) > 1e-9 {
		t.Errorf("pace %.1f/min after the step refused, want the pace held, %.1f/min", 60*e.rate, 60*good)
	}
}

// TestWakeOfAStepRefused: held at 10 a second, a step to 14 refused set a
// ban (or overfilled a window): the server refuses the probes that follow
// at the pace held, whatever the pace, until the ban is over. In that
// wake, nothing admitted, the pace held stands and the rate refused stays
// the step's (halved by the ban's refusals, the climb back took a run to
// 2.1x). Refused on past lockout, the pace held was over the rate after
// all, and the cuts go on.
func TestWakeOfAStepRefused(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.rate, e.good, e.goodFor, e.climbed, e.goodClimbed = 14, 10, 5*time.Second, true, true
	e.ep = epoch{start: t0, judged: t0}
	now := refuseOne(&e, sendAt(&e, t0, t0.Add(200*time.Millisecond)))
	if e.rate != 10 || e.bad != 14 {
		t.Fatalf("the step refused: pace %.2f, refused %.2f; want 10 and 14", e.rate, e.bad)
	}
	first := now
	for now.Sub(first) < 1500*time.Millisecond {
		now = refuseOne(&e, now.Add(20*time.Millisecond))
		if e.rate != 10 || e.bad != 14 {
			t.Fatalf("refused in the wake, %v after the step's: pace %.2f, refused %.2f; want 10 and 14 as they were", now.Sub(first), e.rate, e.bad)
		}
	}
	for now.Sub(first) < lockout+time.Second && e.rate == 10 {
		now = refuseOne(&e, now.Add(20*time.Millisecond))
	}
	if e.rate >= 10 {
		t.Errorf("refused on %v past the step's refusal: pace %.2f, want a cut under the pace held", now.Sub(first), e.rate)
	}
}
