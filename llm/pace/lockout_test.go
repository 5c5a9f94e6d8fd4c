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

// TestEstimatorWall: a server that took a whole window's worth at once
// (20) and then refuses everything for 2 s with no hint (a window of 20 a
// second that bans for 2 s once passed) is at a wall: its run of refusals
// cuts the pace once, and bounds no bucket's rate by one request over the
// run (which would cut it to under a minute's 60). A bucket that refused
// again after taking one request since is bounded so.
func TestEstimatorWall(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	play(&e, cat(repeat(20, 0, step{what: "send", n: 1}), repeat(20, 0, step{what: "ok", seen: 50 * ms, n: 1})))
	var first float64
	for i := range 40 { // refused all along, 0.1 s to 2.05 s
		sent := 100*ms + time.Duration(i)*50*ms
		e.sent(1)
		e.refused(at(sent+ms), at(sent), 1, 0)
		e.tick(at(sent + 2*ms))
		if first == 0 && !math.IsInf(e.pace(), 1) && e.cut.decideAt.IsZero() {
			first = e.pace()
		}
	}
	if e.pace() < first || e.pace() < 5 {
		t.Errorf("pace %.1f/s after 2 s at a wall, %.1f/s after its first cut: want the first cut to stand", e.pace(), first)
	}
	if e.full.held < 1500*ms || e.full.held > 3*time.Second {
		t.Errorf("held %v in a run of 2 s at a wall, want the run and a span at most, counted once", e.full.held)
	}

	// Told a limit five times the server's, the first cut at it is a
	// fortieth (see bounded): the cuts in the run go on, deeper.
	e = newEstimator(100, true, t0)
	play(&e, cat(repeat(20, 0, step{what: "send", n: 1}), repeat(20, 0, step{what: "ok", seen: 50 * ms, n: 1})))
	first = 0
	for i := range 40 {
		sent := 100*ms + time.Duration(i)*50*ms
		e.sent(1)
		e.refused(at(sent+ms), at(sent), 1, 0)
		e.tick(at(sent + 2*ms))
		if first == 0 && e.cut.decideAt.IsZero() && e.pace() < 100 {
			first = e.pace()
		}
	}
	if e.pace() >= first {
		t.Errorf("told 100/s: pace %.1f/s after 2 s at a wall, %.1f/s after its first cut: want the cuts to go on", e.pace(), first)
	}

	// A bucket: refused again after taking one request in 1.5 s, and refused
	// for 1.5 s more with nothing taken: at most one in 1.5 s.
	e = newEstimator(math.Inf(1), true, t0)
	play(&e, cat(repeat(20, 0, step{what: "send", n: 1}), repeat(20, 0, step{what: "ok", seen: 50 * ms, n: 1})))
	e.sent(1)
	e.refused(at(101*ms), at(100*ms), 1, 0)
	e.tick(at(400 * ms))
	play(&e, []step{{what: "send", n: 1}, {what: "ok", send: 1600 * ms, seen: 1650 * ms, n: 1}})
	for i := range 30 {
		sent := 1700*ms + time.Duration(i)*50*ms
		e.sent(1)
		e.refused(at(sent+ms), at(sent), 1, 0)
		e.tick(at(sent + 2*ms))
	}
	e.tick(at(10 * time.Second))
	if e.pace() > 1 {
		t.Errorf("pace %.2f/s after a bucket took one in 1.5 s and nothing for 1.5 s more, want under 1/s", e.pace())
	}
}

// refuseAt counts one request sent and refused, sent at sent, as the
// first of an episode (see markFull).
func refuseAt(e *estimator, sent time.Duration) {
	e.sent(1)
	e.full.nays++
	e.cut.n = 1
	e.markFull(at(sent), quickHold)
}

// TestDryRateAfterBurst: a run of refusals with nothing taken for 1.5 s
// bounds a bucket's rate by one request in 1.5 s, but not when it began
// right after the server took a whole burst (20, what it took before it
// first refused): a window's wall or a ban, as likely.
func TestDryRateAfterBurst(t *testing.T) {
	ms := time.Millisecond
	e := newEstimator(math.Inf(1), true, t0)
	for range 20 {
		e.sent(1)
	}
	refuseAt(&e, 100*ms)
	refuseAt(&e, 1600*ms)
	if r, ok := e.dryRate(e.cut); ok || e.cut.dry != 1500*ms {
		t.Errorf("after a whole burst, refused for %v: bound %.2f/s, %v; want none", e.cut.dry, r, ok)
	}

	refuseAt(&e, 1700*ms)
	e.sent(1) // taken
	refuseAt(&e, 1800*ms)
	refuseAt(&e, 3300*ms)
	if r, ok := e.dryRate(e.cut); !ok || math.Abs(r-1/1.5) > 1e-9 {
		t.Errorf("one taken since the refusal before, refused for %v: bound %.2f/s, %v; want 0.67/s", e.cut.dry, r, ok)
	}
}
