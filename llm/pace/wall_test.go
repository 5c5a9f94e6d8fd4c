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
		if got := e.wallHold(at(c.now), c.now-500*time.Millisecond, 1); c.now+got != c.want {
			t.Errorf("probe refused at %v: next at %v, want %v", c.now, c.now+got, c.want)
		}
	}
	if got := e.wallHold(at(2700*time.Millisecond), lockout, 1); got != e.span {
		t.Errorf("locked out: hold %v, want a span %v", got, e.span)
	}
	e.admitted(at(3070*time.Millisecond), at(3020*time.Millisecond), 1)
	if got := e.wallHold(at(3900*time.Millisecond), 400*time.Millisecond, 1); got != e.span {
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

// TestWallEndsWithWindowShown: a sliding log of 100 a 5 s, its window
// shown by the lane's answers (see windowRate), took 100 from 10.8 s to
// 15.04 s and refused at 15.3 s. The wall holds until the oldest of
// them have left the window (by the end of the slot they were counted
// in, 16 s), not a span (17.7 s); with no window shown, a span.
func TestWallEndsWithWindowShown(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	e.span, e.full.burst = 2425*ms, 100
	for i := range 100 {
		e.long.got.add(at(10800*ms+time.Duration(i)*4240*ms/100), 1)
	}
	now := at(15308 * ms)
	if got := e.wallHold(now, 300*ms, 1); got != e.span {
		t.Errorf("no window shown: hold %v, want a span %v", got, e.span)
	}
	e.window, e.full.wallUntil = 5*time.Second, time.Time{}
	if got, want := e.wallHold(now, 300*ms, 1), at(16*time.Second).Sub(now); got != want {
		t.Errorf("window of 5 s shown: hold %v, want %v (until 16 s)", got, want)
	}
}
