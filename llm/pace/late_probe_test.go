package pace

import (
	"math"
	"testing"
	"time"
)

// testBucket is a bucket of size units refilling at rate a second that
// tells its level left rounded down, and its time to full in whole seconds
// rounded up, as throttled's GCRA does.
type testBucket struct {
	size, rate, level float64
	at                time.Duration
}

func (b *testBucket) take(sent time.Duration) (Reading, bool) {
	b.level = min(b.size, b.level+b.rate*(sent-b.at).Seconds())
	b.at = sent
	ok := b.level >= 1
	if ok {
		b.level--
	}
	full := time.Duration(math.Ceil((b.size-b.level)/b.rate)) * time.Second
	return Reading{Told: true, Limit: int(b.size), Left: int(b.level), Reset: full}, ok
}

// lateRun sends to srv through a window as the lane does (what fits, and
// a probe where roomOrProbe lets one go), its answers lag late, for run;
// it returns the window, what was sent in the run's last half, and how
// many were refused.
func lateRun(srv *testBucket, lag, run time.Duration) (w *window, late float64, refused int) {
	return lateRunOn(&window{}, srv, lag, run)
}

// lateRunOn is lateRun through w.
func lateRunOn(w *window, srv *testBucket, lag, run time.Duration) (_ *window, late float64, refused int) {
	type pending struct {
		r    Reading
		sent time.Duration
		seq  float64
	}
	var inFlight []pending
	count := 0.0
	for now := time.Duration(0); now < run; now += 5 * time.Millisecond {
		for len(inFlight) > 0 && inFlight[0].sent+lag <= now {
			p := inFlight[0]
			inFlight = inFlight[1:]
			w.read(p.r, at(p.sent), at(now), p.seq)
		}
		for {
			ok, _, probe := w.roomOrProbe(at(now), count, 1, 0)
			if !ok {
				break
			}
			if probe {
				w.probeSent(at(now))
			}
			count++
			w.sent(at(now), count)
			r, took := srv.take(now)
			if !took {
				refused++
				w.read(r, at(now), at(now), count) // refusals come back at once
				continue
			}
			if now >= run/2 {
				late++
			}
			inFlight = append(inFlight, pending{r, now, count})
		}
	}
	return w, late, refused
}

// TestLateProbeFindsShortStay: a GCRA of 20 a second with a burst of 5
// (a limit of 6, its time to full told in whole seconds, 1 s) answered
// 3 s late: every reading's reset has passed when it is read, and the
// tracker, holding the lane to its own log, let 6 go a second. Late
// probes, sent while the lane's own sends hold the window full, show
// how soon the server gives them back, and the lane finds the stay of
// its units, near 0.3 s: most of the rate goes in the run's second half
// (14 a second or more, against 6), with few refused.
func TestLateProbeFindsShortStay(t *testing.T) {
	srv := &testBucket{size: 6, rate: 20, level: 6}
	w, late, refused := lateRun(srv, 3*time.Second, 40*time.Second)
	if rate := late / 20; rate < 14 {
		t.Errorf("sent %.1f a second in the second half, want 14 or more (the server takes 20; its own log let 6 go)", rate)
	}
	if refused > 12 {
		t.Errorf("%d refused, want 12 at most", refused)
	}
	if w.late.stay <= 0 || w.late.stay > 400*time.Millisecond {
		t.Errorf("stay %v, want found, at most 0.4 s", w.late.stay)
	}
}

// TestLateProbeNotForTimelyAnswers: answered in 50 ms, well within the
// window's resets, the readings tell the tracker what it needs, and no
// late probe goes.
func TestLateProbeNotForTimelyAnswers(t *testing.T) {
	srv := &testBucket{size: 6, rate: 20, level: 6}
	w, _, _ := lateRun(srv, 50*time.Millisecond, 20*time.Second)
	if !w.late.last.IsZero() || w.late.stay != 0 {
		t.Errorf("late probe went at %v, stay %v; want none", w.late.last, w.late.stay)
	}
}

// TestLateProbesOfRequestsOnly: the token window sends no late probe (a
// prompt's tokens past the tracker, refused on a sliding log of tokens
// answered late), and a lane's request window may.
func TestLateProbesOfRequestsOnly(t *testing.T) {
	ln := newLane(New(Config{Adapt: true}), "m")
	if !ln.tok.win.late.off || ln.req.win.late.off {
		t.Fatalf("late probes off: tokens %v, requests %v; want true, false", ln.tok.win.late.off, ln.req.win.late.off)
	}
	w, late, _ := lateRunOn(&window{late: lateProbes{off: true}}, &testBucket{size: 6, rate: 20, level: 6}, 3*time.Second, 40*time.Second)
	if !w.late.last.IsZero() || late/20 > 7 {
		t.Errorf("off, a late probe went at %v and %.1f a second in the second half; want none, and the own log's 6", w.late.last, late/20)
	}
}

// TestEstimatorTrackedAgainHeld: refused again with no pace, the tracker
// following a stay late probes showed (a window's worth each 0.3 s, 20 a
// second), the pace goes no lower than a twentieth under that rate, though
// what the server took since the refusal before (7 over 17.75 s, the lane
// still finding the stay) is less; not so for a window tracked otherwise.
func TestEstimatorTrackedAgainHeld(t *testing.T) {
	for _, stayed := range []bool{true, false} {
		e := newEstimator(math.Inf(1), true, t0)
		for _, at0 := range []time.Duration{250 * time.Millisecond, 18 * time.Second} {
			play(&e, every(7, at0, 0, forever))
			e.shown, e.tracked, e.stayed = true, 20, stayed
			play(&e, []step{{what: "send", n: 1}, {what: "refused", send: at0, seen: at0, n: 1, hint: 2 * time.Second},
				{what: "tick", seen: at0 + 2*time.Second}})
		}
		switch {
		case stayed && e.pace() < cutTo*20:
			t.Errorf("stayed: pace %.2f, want %.2f at least", e.pace(), cutTo*20)
		case !stayed && e.pace() >= cutTo*20:
			t.Errorf("not stayed: pace %.2f, want the measure under %.2f (the test says nothing)", e.pace(), cutTo*20)
		}
	}
}
