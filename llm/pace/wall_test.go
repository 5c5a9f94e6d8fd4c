package pace

import (
	"math"
	"testing"
	"time"
)

// TestWallProbedAtWindowsEnd: a fixed window of 60 in 3 s that starts at
// the client's first request, sent at t0, refuses from 0.5 s. Each probe
// at its wall goes a whole number of seconds after t0, a fiftieth of a
// span late, not a span after the probe before: at 1.02, 2.02 and 3.02 s,
// where the window reopens at 3 s (probed at 0.75, 1.75 and 2.75 s, the
// next went at 6 s). At a later wall, or locked out, a span.
func TestWallProbedAtWindowsEnd(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.admitted(at(50*time.Millisecond), t0, 1)
	e.admitted(at(60*time.Millisecond), at(10*time.Millisecond), 1)
	e.full.nay(at(500*time.Millisecond), 1)
	e.full.first = at(500 * time.Millisecond) // the first refusal of all
	for _, c := range []struct{ now, want time.Duration }{
		{750 * time.Millisecond, 1020 * time.Millisecond},
		{1020 * time.Millisecond, 2020 * time.Millisecond},
		{2020 * time.Millisecond, 3020 * time.Millisecond},
	} {
		if got := e.wallHold(at(c.now), c.now-500*time.Millisecond); c.now+got != c.want {
			t.Errorf("probe refused at %v: next at %v, want %v", c.now, c.now+got, c.want)
		}
	}
	if got := e.wallHold(at(2700*time.Millisecond), lockout); got != e.span {
		t.Errorf("locked out: hold %v, want a span %v", got, e.span)
	}
	e.admitted(at(3070*time.Millisecond), at(3020*time.Millisecond), 1)
	if got := e.wallHold(at(3900*time.Millisecond), 400*time.Millisecond); got != e.span {
		t.Errorf("at a later wall: hold %v, want a span %v", got, e.span)
	}
}

// TestWallOpensAfterRefusal: the window at a wall opened with the first
// request admitted since the newest refusal went, the earliest of them
// if their answers come out of order.
func TestWallOpensAfterRefusal(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.admitted(at(50*time.Millisecond), t0, 1)
	e.full.nay(at(500*time.Millisecond), 1)
	e.admitted(at(1100*time.Millisecond), at(1060*time.Millisecond), 1)
	e.admitted(at(1110*time.Millisecond), at(1040*time.Millisecond), 1)
	e.admitted(at(1200*time.Millisecond), at(1100*time.Millisecond), 1)
	if want := at(1040 * time.Millisecond); !e.full.opened.Equal(want) {
		t.Errorf("opened %v, want %v", e.full.opened.Sub(t0), want.Sub(t0))
	}
}
