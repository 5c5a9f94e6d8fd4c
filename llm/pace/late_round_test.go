package pace

import (
	"testing"
	"testing/synctest"
	"time"
)

// lateWindow is a window of 6 whose readings come 3 s late, its resets
// whole seconds (1 s), the reading held past its reset, and the stay late
// probes showed, stay (0: none), with the units sent at each of sends.
func lateWindow(stay time.Duration, sends map[time.Duration]int) *window {
	w := &window{limit: 6, base: 6, period: time.Second, reset: at(5 * time.Second), lag: 3 * time.Second}
	w.late.stay, w.late.shown = stay, stay > 0 // a stay late probes showed
	count := 0.0
	for d := time.Duration(0); d <= 20*time.Second; d += 10 * time.Millisecond {
		for range sends[d] {
			count++
			w.sent(at(d), count)
		}
	}
	return w
}

// TestLateBoundCountsAllGiven: when the probe's send went, the server
// counted one unit (5 of 6 left); the lane sent 5 more and the probe, and
// the server said 5 were left: it gave back 6 in 0.5 s, a window's worth,
// so a unit stays 0.5 s at most (not the 3 s the one unit it held showed,
// which made the probe show nothing).
func TestLateBoundCountsAllGiven(t *testing.T) {
	w := lateWindow(0, map[time.Duration]int{0: 1, 250 * time.Millisecond: 5, 500 * time.Millisecond: 1})
	p := lateProbe{at: at(500 * time.Millisecond), ref: t0, refLeft: 5}
	w.bound(p, Reading{Told: true, Limit: 6, Left: 5, Reset: time.Second}, p.at, 7)
	if w.late.stay <= 0 || w.late.stay > 500*time.Millisecond {
		t.Errorf("stay %v, want 0.5 s at most", w.late.stay)
	}
}

// TestLateBoundProbeCountedFirst: a bucket of 6 refilling at 20 a second,
// emptied at 0 s; at 0.15 s the probe went with 3 more, and the server,
// which had 3 back, counted it first (2 left). Counting those 3 as before
// it, the server gave back 6 in 0.15 s, a stay of 0.15 s, half the true
// one; counting them after it, 3, a stay of 0.45 s at most.
func TestLateBoundProbeCountedFirst(t *testing.T) {
	w := lateWindow(0, map[time.Duration]int{0: 6, 150 * time.Millisecond: 4})
	p := lateProbe{at: at(150 * time.Millisecond), ref: t0, refLeft: 0, ahead: 3}
	w.bound(p, Reading{Told: true, Limit: 6, Left: 2, Reset: time.Second}, p.at, 10)
	if w.late.stay < 300*time.Millisecond {
		t.Errorf("stay %v, want 0.3 s at least (the server's)", w.late.stay)
	}
}

// TestLateProbeGoesMidAfterASend: the stay just shown (0.5 s), the lane
// sends the room it gives at once (one unit at 10 s, the rest of the
// window's sends having gone at 9.56 s). A probe let go now would be
// 0.44 s after the oldest of the sends holding the window, testing a
// stay near the one shown; it waits to go halfway into the stay after the
// newest, 10.25 s, and is read against it.
func TestLateProbeGoesMidAfterASend(t *testing.T) {
	w := lateWindow(500*time.Millisecond, map[time.Duration]int{9560 * time.Millisecond: 5, 10 * time.Second: 1})
	when, ok := w.lateProbeAt(at(10*time.Second), 1)
	if !ok || !when.Equal(at(10250*time.Millisecond)) || !w.late.ref.Equal(at(10*time.Second)) {
		t.Errorf("probe at %v (ok %v) against the send of %v; want at 10.25 s, against 10 s", when.Sub(t0), ok, w.late.ref.Sub(t0))
	}
}

// TestLateProbeOneOnItsWayOnceStayShown: while the lane holds to its own
// log, probes go one a span, several on their way; once a stay is shown
// and the lane paced by it, each goes a unit past it, and a second waits
// for the first's answer. A stay newly shown gives up those on their way
// that went as long after their sends, as they show no shorter.
func TestLateProbeOneOnItsWayOnceStayShown(t *testing.T) {
	sends := map[time.Duration]int{9 * time.Second: 6}
	now := at(9200 * time.Millisecond)
	w := lateWindow(0, sends)
	w.late.fly[0] = lateProbe{at: at(8 * time.Second), ref: at(7500 * time.Millisecond)}
	if _, ok := w.lateProbeAt(now, 1); !ok {
		t.Errorf("no stay shown, one on its way: no probe may go, want one")
	}
	w = lateWindow(400*time.Millisecond, sends)
	w.late.fly[0] = lateProbe{at: at(8 * time.Second), ref: at(7800 * time.Millisecond)}
	if _, ok := w.lateProbeAt(now, 1); ok {
		t.Errorf("stay shown, one on its way: a probe may go, want none")
	}
	w.late.drop(150 * time.Millisecond)
	if _, ok := w.lateProbeAt(now, 1); !ok {
		t.Errorf("the one on its way went 0.2 s after its send, a stay of 0.15 s shown: no probe may go, want one")
	}
}

// TestLateProbeBeforeFirstAnswer: a window of 6 told by a refusal at
// once (its reset 1 s), the lane's 6 others sent at 0 s not answered at
// 1.6 s: their answers come later than the window's resets, and a late
// probe may go before the first of them (2.1 s, halfway into a second
// after the send at 1.6 s), not only once it comes.
func TestLateProbeBeforeFirstAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Adapt: true})
		var held []*Permit
		for range 7 {
			p, err := l.Acquire(t.Context(), "m", 0)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, p)
		}
		held[6].Done(Outcome{Result: Refused, Hint: time.Second,
			Requests: Reading{Told: true, Limit: 6, Left: 0, Reset: time.Second}})
		time.Sleep(1600 * time.Millisecond)
		p, err := l.Acquire(t.Context(), "m", 0)
		if err != nil {
			t.Fatal(err)
		}
		w := &l.lane("m").req.win
		if when, ok := w.lateProbeAt(time.Now(), 1); !ok || !when.Equal(time.Now().Add(500*time.Millisecond)) {
			t.Errorf("late probe at %v from now (ok %v), want 0.5 s", when.Sub(time.Now()), ok)
		}
		for _, p := range append(held[:6], p) {
			p.Release()
		}
	})
}

// TestLateStayGuardedAsItsLength: a stay of 0.3 s that late probes showed
// under resets of 1 s is guarded by a fiftieth of it, as a told length
// is, not by the reset's 20 ms (held at 0.32 s, a GCRA of 20 a second
// answered 3 s late went at 18.75 a second).
func TestLateStayGuardedAsItsLength(t *testing.T) {
	w := lateWindow(300*time.Millisecond, nil)
	if got, want := w.span(), 306*time.Millisecond; got != want {
		t.Errorf("span %v, want %v", got, want)
	}
	w.late.stay = 0
	if got, want := w.span(), 1020*time.Millisecond; got != want {
		t.Errorf("with no stay shown, span %v, want the reset's %v", got, want)
	}
}
