package pace

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// gcraServer is throttled's GCRA (see testBucket) under synctest's clock,
// refusing with Retry-After in whole seconds; it logs when each admitted
// request was sent, from start.
type gcraServer struct {
	mu      sync.Mutex
	b       testBucket
	start   time.Time
	took    []time.Duration
	refused int
}

func (g *gcraServer) serve() Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	sent := time.Since(g.start)
	r, ok := g.b.take(sent)
	if !ok {
		g.refused++
		return Outcome{Result: Refused, Hint: time.Second, Requests: r}
	}
	g.took = append(g.took, sent)
	return Outcome{Result: Admitted, Requests: r}
}

// runLate sends n requests through an untold lane with workers workers to
// g, admitted ones answered lag after they went, refusals at once.
func runLate(t *testing.T, g *gcraServer, n, workers int, lag time.Duration) {
	l := New(Config{Adapt: true, Margin: 0.03})
	g.start = time.Now()
	g.b.level, g.b.at = g.b.size, 0
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				for {
					p, err := l.Acquire(t.Context(), "m", 1)
					if err != nil {
						t.Error(err)
						return
					}
					o := g.serve()
					if o.Result == Admitted {
						time.Sleep(lag)
						p.Done(o)
						break
					}
					time.Sleep(p.Done(o))
				}
			}
		})
	}
	wg.Wait()
}

// TestTakenShowsStay: throttled's GCRA, 20 a second with a burst of 5,
// tells a limit of 6 and a reset of 1 s, and its answers come 3 s late.
// The opening's refusal comes with fourteen sent in half a second and
// not refused: no window of 6 a second takes that, so the lane holds its
// units for the stay that count shows (0.38 s) and not the reset's
// second, sending near 16 a second from then on, not 6, while the late
// probes find the rest. (Held to the reset, 18 of the sends of seconds 1
// to 4 were admitted.)
func TestTakenShowsStay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gcraServer{b: testBucket{size: 6, rate: 20}}
		runLate(t, g, 300, 64, 3*time.Second)
		var early int
		for _, d := range g.took {
			if d >= time.Second && d < 4*time.Second {
				early++
			}
		}
		if early < 36 || g.refused > 6 {
			t.Errorf("%d admitted of those sent from 1 s to 4 s, %d refused; want 36 at least (12 a second), 6 at most", early, g.refused)
		}
	})
}

// TestTakenNotPastTwiceTheLimit: a sliding log of 6 a second takes 6 and
// refuses the rest; a fixed window may take 12 across its edge. Neither
// count shows a stay shorter than the reset; nor does a burst of 20 taken
// within 20 ms (a limit of 6 told by each of several replicas): it tells
// nothing of a refill, and its stay would be a few milliseconds.
func TestTakenNotPastTwiceTheLimit(t *testing.T) {
	for _, c := range []struct {
		took int
		gap  time.Duration
	}{{6, 10 * time.Millisecond}, {12, 10 * time.Millisecond}, {20, time.Millisecond}} {
		l := New(Config{Adapt: true})
		ln := l.lane("m")
		ln.mu.Lock()
		now := l.now()
		f := &ln.gate.policy.log
		for i := range c.took + 1 {
			sent := now.Add(time.Duration(i) * c.gap)
			s := f.send(sent)
			if i < c.took {
				continue
			}
			ln.req.win.sent(sent, float64(i+1))
			r := Reading{Told: true, Limit: 6, Left: 0, Reset: time.Second}
			ln.req.win.read(r, sent, sent, float64(i+1))
			f.answer(s, sent, refusedIt)
			ln.taken(Outcome{Result: Refused, Requests: r}, sent)
		}
		ln.look(now.Add(time.Second))
		stay := ln.req.win.late.stay
		ln.mu.Unlock()
		if stay != 0 {
			t.Errorf("%d taken %v apart: a stay of %v shown, want none", c.took, c.gap, stay)
		}
	}
}

// TestLateProbesSplitACountedStay: a stay only the lane's count showed
// (0.38 s, answers 3 s late) is split among the probes that go before
// the first answer, each testing a little shorter, not all halfway; while
// one is on its way, others may go. Once a late probe has shown a stay,
// the next tests halfway, one at a time.
func TestLateProbesSplitACountedStay(t *testing.T) {
	now := at(10 * time.Second)
	var l lateProbes
	l.stay = 380 * time.Millisecond
	first := l.next(now, 3*time.Second, l.stay)
	l.fly[0] = lateProbe{at: now.Add(-300 * time.Millisecond)}
	second := l.next(now, 3*time.Second, l.stay)
	if first <= l.stay*4/5 || second >= first || second <= l.stay/2 {
		t.Errorf("a counted stay of %v: probes test %v, then %v; want each shorter, over %v", l.stay, first, second, l.stay/2)
	}
	if l.flying() != lateFlying {
		t.Errorf("a counted stay: %d may be on their way, want %d", l.flying(), lateFlying)
	}
	l.shown = true
	if mid := l.next(now, 3*time.Second, l.stay); mid != l.stay/2 || l.flying() != 1 {
		t.Errorf("a stay shown: the next tests %v, %d on their way; want %v, 1", mid, l.flying(), l.stay/2)
	}
}

// TestLateBoundCappedBucketNoLeast: a bucket of 6 refilling at 20 a
// second (a stay of 0.3 s) short of 5 after the send the probe is read
// against; 0.31 s later it is full again, and the probe and one sent
// with it, counted first, leave it 4. It gave back all it lacked, and
// may have stood full for part of the time: that is no sign that its
// stay is 0.31 s at least.
func TestLateBoundCappedBucketNoLeast(t *testing.T) {
	w := lateWindow(0, map[time.Duration]int{0: 1, 310 * time.Millisecond: 2})
	p := lateProbe{at: at(310 * time.Millisecond), ref: t0, refLeft: 1}
	w.bound(p, Reading{Told: true, Limit: 6, Left: 4, Reset: time.Second}, p.at, 2)
	if w.late.least > 300*time.Millisecond {
		t.Errorf("least stay %v, want 0.3 s at most (the server's)", w.late.least)
	}
}

// TestNoCounterProbeUnderAStay: a stay under half the reset shown, the
// tracker lets units go after it already, and no probe goes to test
// whether a counter gives them back from half the reset on.
func TestNoCounterProbeUnderAStay(t *testing.T) {
	for _, stay := range []time.Duration{0, 380 * time.Millisecond} {
		w := lateWindow(stay, map[time.Duration]int{4 * time.Second: 6})
		w.late.shown = false
		if _, ok := w.probeAt(at(4900*time.Millisecond), 1); ok != (stay == 0) {
			t.Errorf("a stay of %v shown: a probe may go %v, want %v", stay, ok, stay == 0)
		}
	}
}
