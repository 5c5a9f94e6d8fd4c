package pace

import (
	"math"
	"testing"
	"time"
)

// every returns k requests of one unit sent every gap from start, each
// admitted after latency (not at all, if it is longer than forever).
func every(k int, start, gap, latency time.Duration) []step {
	var out []step
	for i := range k {
		sent := start + time.Duration(i)*gap
		out = append(out, step{what: "send", n: 1})
		if latency < forever {
			out = append(out, step{what: "ok", send: sent, seen: sent + latency, n: 1})
		}
	}
	return out
}

const forever = time.Hour

// untoldAt returns an untold estimator pacing at rate, a span of 2 s, its
// epoch begun at start.
func untoldAt(rate float64, start time.Time) estimator {
	return estimator{ceil: math.Inf(1), adapt: true, rate: rate, span: 2 * time.Second, patience: firstPatience,
		ep: epoch{start: start, judged: start}}
}

// TestEstimatorFullRate: a bucket of 24 a minute with a burst of 7 refused
// at 0 s, was sent 0.38 a second for 30 s, then a probe at 0.5 for 10 s,
// which its burst held until it refused at 40 s. The probe's epoch had too
// few answers to measure and went over a pace held (0.45): the search
// went back to it, over the rate. What the bucket took from the refusal
// at 0 s to this one, 17 in 40 s, is its rate; the cut goes a twentieth
// under it.
func TestEstimatorFullRate(t *testing.T) {
	e := untoldAt(0.45, t0)
	play(&e, cat(every(7, 0, 0, 10*time.Millisecond), // its burst, then full
		[]step{{what: "send", n: 1}, {what: "refused", seen: 0, n: 1}, {what: "tick", seen: 300 * time.Millisecond}}))
	e.good, e.bad, e.rate = 0.45, 0.6, 0.38
	play(&e, every(12, 300*time.Millisecond, 2600*time.Millisecond, 50*time.Millisecond))
	e.shift(at(30*time.Second), 0.5)
	play(&e, cat(every(5, 30*time.Second, 2*time.Second, 50*time.Millisecond), []step{
		{what: "send", n: 1}, {what: "refused", send: 40 * time.Second, seen: 40 * time.Second, n: 1},
		{what: "tick", seen: 41 * time.Second}}))
	if want := cutTo * 17 / 40; math.Abs(e.pace()-want) > 0.02 {
		t.Errorf("pace = %.3f, want %.3f, a twentieth under what the bucket took between refusals", e.pace(), want)
	}
	if !e.measured || math.Abs(e.bad-17.0/40) > 0.02 {
		t.Errorf("bad = %.3f (measured %v), want 17/40 measured", e.bad, e.measured)
	}
	// A probe at the rate measured holds, as it should: it stays there,
	// where taking it for a limit risen climbed over the rate.
	e.rate, e.sinceProbe = e.bad, 10
	if next := e.up(at(60 * time.Second)); next != e.bad || e.bad == 0 {
		t.Errorf("after a probe at the measured rate held: next %.3f, bad %.3f; want it to stay at %.3f", next, e.bad, 17.0/40)
	}
}

// TestEstimatorFullRateWindow: a window's wall lets through a whole window
// at once, so between two refusals four spans apart a sliding counter took
// a quarter over or under its rate. A measure within a window's worth of a
// pace held does not cut it.
func TestEstimatorFullRateWindow(t *testing.T) {
	e := untoldAt(19, t0)
	play(&e, cat(every(20, 0, 0, 10*time.Millisecond),
		[]step{{what: "send", n: 1}, {what: "refused", seen: 0, n: 1}, {what: "tick", seen: 300 * time.Millisecond}}))
	e.good, e.bad, e.rate = 19, 20, 19
	play(&e, every(150, 300*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond)) // 150 in 7.5 s, then a step up
	e.shift(at(7800*time.Millisecond), 20)
	play(&e, cat(every(10, 7800*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond), []step{
		{what: "send", n: 1}, {what: "refused", send: 8300 * time.Millisecond, seen: 8300 * time.Millisecond, n: 1},
		{what: "tick", seen: 9 * time.Second}}))
	if e.pace() != 19 || e.measured {
		t.Errorf("pace = %.2f (measured %v), want back to 19, the pace held", e.pace(), e.measured)
	}
}

// TestEstimatorDryRun: refused all along for over a second, the server
// taking nothing, a bucket lets through less than one request in that
// long: the pace goes under it, where the search had gone back to the
// pace of the opening (7 a second) for want of answers. Each refusal of
// the run holds the lane as long as the run has lasted.
func TestEstimatorDryRun(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	play(&e, cat(every(7, 0, 0, 10*time.Millisecond), []step{{what: "send", n: 1},
		{what: "refused", send: 20 * time.Millisecond, seen: 20 * time.Millisecond, n: 1}, {what: "tick", seen: 300 * time.Millisecond}}))
	var holds []time.Duration
	for _, d := range []time.Duration{300, 700, 1500} {
		now := at(d * time.Millisecond)
		e.sent(1)
		holds = append(holds, e.refused(now, now, 1, 0))
		e.tick(now.Add(holds[len(holds)-1]))
	}
	if want := cutTo / 1.48; math.Abs(e.pace()-want) > 0.01 {
		t.Errorf("pace = %.3f, want %.3f: a twentieth under one request in the 1.48 s refused", e.pace(), want)
	}
	if holds[1] < 680*time.Millisecond {
		t.Errorf("holds %v: the second, refused 0.68 s after the first, want as long at least", holds)
	}
}

// TestEstimatorDryRunAfterABigBurst: the same run of refusals, of small
// requests (a token each) after a burst of 7 of 100 tokens, and one
// admitted between the first two refusals (in the flood of refusals that
// follows a token window spent, small requests still fit): a bucket that
// took 700 and leaks under a token in 1.48 s would take 17 minutes to
// fill again, and none that servers give is so slow; a window spent is
// the likelier. No bound so: a token window of a minute that says nothing
// was cut to 4,314 tokens a minute from 480,000 so, and held there.
func TestEstimatorDryRunAfterABigBurst(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	var burst []step
	for range 7 {
		burst = append(burst, step{what: "send", n: 100}, step{what: "ok", seen: 10 * time.Millisecond, n: 100})
	}
	play(&e, cat(burst, []step{{what: "send", n: 1},
		{what: "refused", send: 20 * time.Millisecond, seen: 20 * time.Millisecond, n: 1},
		{what: "send", n: 1}, {what: "ok", send: 50 * time.Millisecond, seen: 60 * time.Millisecond, n: 1},
		{what: "send", n: 1}, {what: "refused", send: 100 * time.Millisecond, seen: 100 * time.Millisecond, n: 1},
		{what: "tick", seen: 400 * time.Millisecond}}))
	for _, d := range []time.Duration{400, 800, 1600} {
		now := at(d * time.Millisecond)
		e.sent(1)
		hold := e.refused(now, now, 1, 0)
		if r, ok := e.dryRate(e.cut); ok {
			t.Errorf("refused %v: bounded to %.3f a second, want no bound after a burst of 700", d*time.Millisecond, r)
		}
		e.tick(now.Add(hold))
	}
	if e.pace() < 1 {
		t.Errorf("pace = %.3f a second, want no cut to under a token a second", e.pace())
	}
}

// TestEstimatorSlowAnswers: answers slower than a minute's window, three
// refusals of twenty sent, after cuts in a row, are no halving and no
// lockout: what was sent and not refused is on its way, a refusal coming
// back at once.
func TestEstimatorSlowAnswers(t *testing.T) {
	e := untoldAt(0.45, t0)
	e.bad, e.downs = 0.5, 2
	play(&e, cat(every(17, 0, 1300*time.Millisecond, forever), []step{
		{what: "send", n: 1}, {what: "refused", send: 22 * time.Second, seen: 22 * time.Second, n: 1},
		{what: "send", n: 1}, {what: "refused", send: 22 * time.Second, seen: 22 * time.Second, n: 1},
		{what: "send", n: 1}, {what: "refused", send: 22 * time.Second, seen: 22 * time.Second, n: 1},
		{what: "tick", seen: 23 * time.Second}}))
	if e.pace() < cutLeast*0.45*0.99 {
		t.Errorf("pace = %.3f, want a tenth under 0.45 at most", e.pace())
	}
	if e.locked != 0 {
		t.Errorf("locked %d, want 0: 17 of 20 sent are on their way", e.locked)
	}
}

// TestEstimatorDryRunLong: a run of refusals longer than dryMost is more
// likely a window of a minute spent than a bucket this slow: no bound of
// one request in so long, and no hold longer than lockout of its own.
func TestEstimatorDryRunLong(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	play(&e, cat(every(7, 0, 0, 10*time.Millisecond), []step{{what: "send", n: 1},
		{what: "refused", send: 20 * time.Millisecond, seen: 20 * time.Millisecond, n: 1}, {what: "tick", seen: 300 * time.Millisecond}}))
	e.sent(1)
	e.admitted(at(time.Second), at(900*time.Millisecond), 1) // slow answers known: a lockout is shown by refusals
	for _, d := range []time.Duration{4, 8} {
		now := at(d * time.Second)
		e.sent(1)
		if hold := e.refused(now, now, 1, 0); hold > lockout && e.locked == 0 {
			t.Errorf("refused %v into the run: hold %v, want lockout (%v) at most", d*time.Second, hold, lockout)
		}
		if r, ok := e.dryRate(e.cut); ok {
			t.Errorf("refused %v into the run: bounded to %.3f a second, want no bound", d*time.Second, r)
		}
		e.tick(now.Add(e.cut.decideAt.Sub(now)))
	}
}

// TestEstimatorTrackedAgain: a GCRA of 24 a minute with a burst of 7,
// told GitHub's way and answered 90 s late: the lane, its tracker
// following the window the refusals tell, sends the burst at 0 s and at
// the reset 17.75 s later, the eighth refused each time. With no pace,
// what the server took between the two refusals, over the whole time
// between, is its rate: the pace goes a twentieth under it, where it
// stayed none and the tracker sent the burst back at every reset. Two
// refusals a second apart (a hint of a second's) measure nothing.
func TestEstimatorTrackedAgain(t *testing.T) {
	burst := func(e *estimator, at0, hint time.Duration) {
		play(e, every(7, at0, 0, forever))
		e.shown = true
		play(e, []step{{what: "send", n: 1}, {what: "refused", send: at0, seen: at0, n: 1, hint: hint},
			{what: "tick", seen: at0 + hint}})
	}
	e := newEstimator(math.Inf(1), true, t0)
	burst(&e, 250*time.Millisecond, 3*time.Second)
	if !math.IsInf(e.pace(), 1) {
		t.Fatalf("after the first refusal, shown: pace %.3f, want none (the tracker holds the sends)", e.pace())
	}
	burst(&e, 18*time.Second, 2*time.Second)
	if want := cutTo * 7 / 17.75; math.Abs(e.pace()-want) > 0.01 || !e.measured {
		t.Errorf("after the burst back at the reset was refused: pace %.3f (measured %v), want %.3f measured", e.pace(), e.measured, want)
	}
	// Many admitted before: the probe's wait counts from the measure, so a
	// probe at it that holds stays there.
	e = newEstimator(math.Inf(1), true, t0)
	burst(&e, 250*time.Millisecond, 3*time.Second)
	e.sinceProbe = 500
	burst(&e, 18*time.Second, 2*time.Second)
	if e.sinceProbe != 0 {
		t.Errorf("after the measure: %d admitted since the last probe, want 0", e.sinceProbe)
	}
	e = newEstimator(math.Inf(1), true, t0)
	burst(&e, 500*time.Millisecond, time.Second)
	burst(&e, 1500*time.Millisecond, time.Second)
	if !math.IsInf(e.pace(), 1) {
		t.Errorf("refused again a second later: pace %.3f, want none", e.pace())
	}
}

// TestEstimatorBurstRefusedLate: a GCRA of 5 a second with no burst,
// answered 3 s late, its headers telling the window: 4 sent at once, one
// admitted, three refused (the first of them marks the server full); a
// second later, after the hint, 3 at once, one admitted, two refused. The
// burst's later refusals are of requests sent with the first, not since:
// the server took one of the second's, and was not refused all along for
// a second (dryRate's measure of one request a second, a cut to 56 a
// minute where the rate is 300; the run took 3.9x).
func TestEstimatorBurstRefusedLate(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.shown = true
	refusals := func(k int, d time.Duration) []step {
		return repeat(k, 0, step{what: "refused", send: d, seen: d, n: 1, hint: time.Second})
	}
	play(&e, cat(repeat(4, 0, step{what: "send", n: 1}), refusals(3, 0), []step{{what: "tick", seen: time.Second}}))
	d := 1020 * time.Millisecond
	play(&e, cat(repeat(3, 0, step{what: "send", n: 1}), refusals(2, d), []step{{what: "tick", seen: d + time.Second}}))
	if e.full.burst != 1 {
		t.Errorf("burst %.0f, want 1: what the server took before its first refusal", e.full.burst)
	}
	if p := e.pace(); p < 1.5 {
		t.Errorf("pace %.2f a second, want no cut to what one request in a second shows (the server took 1 of the 3)", p)
	}
}

// TestFullRateNotOverAClimb: what the server took between two refusals
// measures its rate only where it was full all along: where the second
// half of that time took over a quarter more than the first, the lane
// climbed from under the rate meanwhile, and a measure under the pace the
// server held for a span (good) is only what was sent. (nginx's limit_req
// of 10 a second with no burst: the opening cut to 135/min, the climb to
// 680/min refused 10 s later, its 202/min cut the pace to 192/min: 1.8x.)
// Taken at a steady pace, the same measure stands.
func TestFullRateNotOverAClimb(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second float64 // units admitted a second in each half of the 10 s
		want          bool
	}{{"a climb", 2.5, 6, false}, {"a steady pace", 4.25, 4.25, true}} {
		e := estimator{ceil: math.Inf(1), adapt: true, rate: 680.0 / 60, good: 340.0 / 60, span: time.Second, ep: epoch{start: t0}}
		e.full.burst = 4
		start := t0.Add(500 * time.Millisecond)
		took := 0.0
		for i := range 100 {
			per := tc.first
			if i >= 50 {
				per = tc.second
			}
			e.long.got.add(start.Add(time.Duration(i)*100*time.Millisecond), per/10)
			took += per / 10
		}
		cut := pending{at: start.Add(10 * time.Second), took: took, since: 10 * time.Second, between: 10 * time.Second, n: 1}
		r, _, ok := e.fullRate(cut)
		if ok != tc.want {
			t.Errorf("%s: fullRate = %.0f/min, %v; want a measure %v", tc.name, r*60, ok, tc.want)
		}
	}
}

// What the server took before its first refusal of all, its burst, stays
// known when the refusals are found to be a concurrency cap's and the
// estimator starts afresh: it bounds how long what the server takes
// between refusals measures its rate. (Forgotten, a leaky bucket with no
// burst taken for a cap of 1 seemed to hold 40, the 40 admitted before
// the next refusal, and a climb's average cut the pace.)
func TestAfreshKeepsBurst(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.full.sent, e.full.nays = 4, 3 // 4 at once, 1 admitted
	e.markFull(t0, 0)
	if e.full.burst != 1 {
		t.Fatalf("burst %v, want 1", e.full.burst)
	}
	e.stretch(2 * time.Second)
	n := e.afresh(at(time.Second))
	if n.span != 2*time.Second || !math.IsInf(n.rate, 1) || n.good != 0 || n.bad != 0 {
		t.Errorf("afresh: span %v rate %v good %v bad %v, want 2s, none, 0, 0", n.span, n.rate, n.good, n.bad)
	}
	n.full.sent = 40 // 40 admitted before its first refusal
	n.markFull(at(10*time.Second), 0)
	if n.full.burst != 1 {
		t.Errorf("burst %v after the first refusal afresh, want still 1", n.full.burst)
	}
	// 70 taken over 10 s: at 7 a second a twentieth under would take a
	// burst of 3.5 to be full at both ends, not the 1 it has.
	if r, _, ok := n.fullRate(pending{since: 10 * time.Second, took: 70, n: 1}); ok {
		t.Errorf("fullRate %.2f, ok: want no measure over longer than the burst lasts", r)
	}
}

// What the server took between refusals is no measure under what a pace
// held for a span shows it lets through, its burst aside (see belowHeld):
// 5.57 a second held 2.2 s, a burst of 1, is 5.1 a second at least.
func TestFullRateNotBelowHeld(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.full.burst, e.good = 1, 5.57
	cut := pending{at: at(10 * time.Second), since: 4 * time.Second, took: 18.4, n: 1} // 4.6 a second
	if r, _, ok := e.fullRate(cut); !ok {
		t.Fatalf("with no time held known: %.2f, not a measure; want one", r)
	}
	e.goodFor = 2200 * time.Millisecond
	if r, _, ok := e.fullRate(cut); ok {
		t.Errorf("%.2f a second measured under the 5.1 the pace held shows", r)
	}
}

// up records how long the pace it makes good held.
func TestUpRecordsGoodFor(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.shift(t0, 5)
	e.up(at(2 * time.Second))
	if e.good != 5 || e.goodFor != 2*time.Second {
		t.Errorf("good %v for %v, want 5 for 2s", e.good, e.goodFor)
	}
}
