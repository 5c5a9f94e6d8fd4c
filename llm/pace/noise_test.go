package pace

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// serve runs e against a server for d from t0, in steps of 10 ms: the
// pace (or 1600 a second with none, 32 workers at 20 ms) is sent, each
// request answered 20 ms later as refuse says (with a 5 ms hint), and no
// request sent while a hold is on. It returns the pace each second.
func serve(e *estimator, d time.Duration, refuse func(now time.Time) bool) []float64 {
	type flight struct{ sent, due time.Time }
	var air []flight
	var paces []float64
	credit, until := 0.0, t0
	for now := t0; now.Before(t0.Add(d)); now = now.Add(10 * time.Millisecond) {
		for len(air) > 0 && !air[0].due.After(now) {
			f := air[0]
			air = air[1:]
			if refuse(now) {
				if hold := e.refused(now, f.sent, 1, 5*time.Millisecond); now.Add(hold).After(until) {
					until = now.Add(hold)
				}
			} else {
				e.admitted(now, f.sent, 1)
			}
		}
		e.tick(now)
		credit = min(credit+min(e.pace(), 1600)/100, 16)
		for ; credit >= 1 && !now.Before(until); credit-- {
			e.sent(1)
			air = append(air, flight{sent: now, due: now.Add(20 * time.Millisecond)})
		}
		if now.Sub(t0)%time.Second == 0 {
			paces = append(paces, e.pace())
		}
	}
	return paces
}

// flaky refuses one request in ten at random, whatever the pace.
func flaky(seed uint64) func(time.Time) bool {
	rng := rand.New(rand.NewPCG(seed, seed))
	return func(time.Time) bool { return rng.IntN(10) == 0 }
}

// limited admits limit requests a sliding second and refuses the rest.
func limited(limit int) func(time.Time) bool {
	var took []time.Time
	return func(now time.Time) bool {
		for len(took) > 0 && now.Sub(took[0]) >= time.Second {
			took = took[1:]
		}
		if len(took) >= limit {
			return true
		}
		took = append(took, now)
		return false
	}
}

// TestEstimatorNoise: against refusals of one request in ten whatever the
// pace, the cuts they made are undone once the shares refused at the
// rates tried show it (the pace back to none, or to the ceiling), and the
// noise level is known; a limit is never taken for noise.
func TestEstimatorNoise(t *testing.T) {
	inf := math.Inf(1)
	for seed := range uint64(10) {
		for _, ceil := range []float64{inf, 300} {
			e := newEstimator(ceil, true, t0)
			paces := serve(&e, 20*time.Second, flaky(seed))
			// 1600 a second is all that is sent: a pace over it holds.
			if last := paces[len(paces)-1]; last < min(ceil, 1600) || e.noise.level < 0.05 || e.noise.level > 0.2 {
				t.Errorf("seed %d, ceiling %v: paces %v, noise level %.3f; want the ceiling again, and a level near 0.1",
					seed, ceil, paces, e.noise.level)
			}
		}
	}
	e := newEstimator(inf, true, t0)
	refuse, level := limited(20), 0.0
	paces := serve(&e, 30*time.Second, func(now time.Time) bool {
		level = max(level, e.noise.level)
		return refuse(now)
	})
	if last := paces[len(paces)-1]; level > 0 || last > 22 {
		t.Errorf("against 20 a second: paces %v, noise level up to %.3f; want under about 20, and no noise", paces, level)
	}
}

// TestNoiseOdds: the odds of noise against a limit, from epochs logged.
func TestNoiseOdds(t *testing.T) {
	// ep is an epoch at rate with nays of ans refused, that got all the
	// rest admitted over its time.
	ep := func(rate, nays, ans float64) tried {
		return tried{rate: rate, got: rate * (1 - nays/ans), ans: ans, nays: nays}
	}
	flat := []tried{ep(40, 2, 20), ep(36, 2, 20), ep(32, 2, 20), ep(29, 2, 20), ep(26, 2, 20), ep(23, 2, 20)}
	capped := append([]tried{}, flat...)
	capped[0].got = 0.4 * capped[0].rate // what a window let through at a probe over it
	tests := []struct {
		name string
		log  []tried
		want func(odds float64) bool
	}{
		{"one share refused at every rate: noise", flat, func(o float64) bool { return o >= noiseOdds }},
		{"shares that fall with the rate: a limit", []tried{ep(40, 10, 20), ep(30, 7, 21), ep(25, 4, 20), ep(20, 0, 20), ep(18, 0, 20)},
			func(o float64) bool { return o < hintOdds }},
		{"refusals in two epochs only: nothing said", []tried{ep(40, 3, 20), ep(36, 0, 20), ep(32, 0, 20), ep(29, 3, 20)},
			func(o float64) bool { return math.IsInf(o, -1) }},
		{"a third or more refused: a limit, however flat", []tried{ep(40, 7, 20), ep(30, 7, 20), ep(20, 7, 20)},
			func(o float64) bool { return math.IsInf(o, -1) }},
		{"shares that rose as the rate fell: a long window's memory", []tried{ep(40, 1, 40), ep(38, 1, 40), ep(20, 6, 20), ep(19, 6, 20)},
			func(o float64) bool { return math.IsInf(o, -1) }},
		{"an epoch let through far less than it sent: capped", capped, func(o float64) bool { return math.IsInf(o, -1) }},
	}
	for _, tt := range tests {
		nz := noise{top: 40}
		for _, tr := range tt.log {
			nz.log[nz.n] = tr
			nz.n++
		}
		if got := nz.odds(); !tt.want(got) {
			t.Errorf("%s: odds = %v", tt.name, got)
		}
	}
}

// TestNoiseLevel: what a known noise level explains, and how it is kept.
func TestNoiseLevel(t *testing.T) {
	nz := noise{level: 0.1, ans: 100, nays: 10}
	for _, tt := range []struct {
		nays, answers int
		want          bool
	}{{1, 1, true}, {3, 3, true}, {4, 5, true}, {5, 5, false}, {10, 100, true}, {23, 100, true}, {24, 100, false}} {
		if got := nz.explains(&epoch{answers: tt.answers, nays: tt.nays}); got != tt.want {
			t.Errorf("level 0.1 explains %d refused of %d = %v, want %v", tt.nays, tt.answers, got, tt.want)
		}
	}
	if (&noise{}).explains(&epoch{answers: 100, nays: 1}) {
		t.Error("no level known explains a refusal")
	}
	up := nz
	up.fold(&epoch{answers: 50, nays: 40})
	if up.level != 0 {
		t.Errorf("a level folded up to %v is kept, want it forgotten: a limit", up.nays/up.ans)
	}
	down := nz
	for range 20 {
		down.fold(&epoch{answers: 100})
	}
	if down.level != 0 {
		t.Errorf("a level that fell to %v over 2000 answers is kept, want it forgotten", down.nays/down.ans)
	}
	nz.fold(&epoch{answers: 100, nays: 12})
	if nz.level != 0.11 {
		t.Errorf("level after 12 of 100 = %v, want 0.11", nz.level)
	}
}

// TestNoiseRecord: an epoch with no pace is not logged (its rate is a
// burst's) but is the pace to go back to; the probe is twice the fastest
// epoch, the top at most.
func TestNoiseRecord(t *testing.T) {
	var nz noise
	nz.record(at(time.Second), 50, math.Inf(1), &epoch{start: t0, answers: 40, nays: 3})
	nz.record(at(2*time.Second), 30, 30, &epoch{start: at(time.Second), first: at(time.Second), answers: 30, nays: 3, admitted: 27})
	if nz.n != 1 || nz.log[0].rate != 30 || nz.log[0].got != 27 || !math.IsInf(nz.top, 1) {
		t.Errorf("after an epoch with no pace and one at 30: %d logged (%+v), top %v; want the one at 30 (27 got a second), top +Inf",
			nz.n, nz.log[0], nz.top)
	}
	// What an epoch got is counted from its first answer: a short one at
	// 50 a second, answered 20 ms after each went, got 50 a second.
	nz.record(at(2120*time.Millisecond), 50, 50, &epoch{start: at(2 * time.Second), first: at(2020 * time.Millisecond), answers: 6, nays: 1, admitted: 5})
	// In units, as the rate is: 5 requests of 100 tokens got 5000 a second.
	nz.record(at(2120*time.Millisecond), 5000, 5000, &epoch{start: at(2 * time.Second), first: at(2020 * time.Millisecond), answers: 6, nays: 1, admitted: 500})
	if got := nz.log[2].got; math.Abs(got-5000) > 1e-6 {
		t.Errorf("an epoch of 100-token requests got %v, want 5000 tokens a second", got)
	}
	if got := nz.log[1].got; math.Abs(got-50) > 1e-6 {
		t.Errorf("a short epoch at 50 a second got %v, want 50: the round trip is not a cap", got)
	}
	nz.n = 1
	if got := nz.probe(); got != 60 {
		t.Errorf("probe = %v, want 60", got)
	}
	nz.top = 45
	if got := nz.probe(); got != 45 {
		t.Errorf("probe under a top of 45 = %v, want 45", got)
	}
}

// TestNoiseProbe: refusals that make noise likelier than a limit, but not
// yet shown, probe at twice the fastest rate tried rather than cut; with
// no room for a probe well over the rate sent (the pace before the cuts
// is near), they cut.
func TestNoiseProbe(t *testing.T) {
	for _, tt := range []struct {
		top        float64
		want, most float64 // the pace after: want, or if 0, at most most
	}{{math.Inf(1), 48, 0}, {25, 0, 20 * cutLeast}} {
		e := estimator{ceil: math.Inf(1), adapt: true, rate: 20, span: time.Second, patience: firstPatience, downs: 2,
			ep: epoch{start: t0, judged: t0}}
		e.noise = noise{top: tt.top, n: 2, log: [24]tried{{rate: 24, got: 21.6, ans: 20, nays: 2}, {rate: 22, got: 19.8, ans: 20, nays: 2}}}
		play(&e, cat(sendOK(18, 50*time.Millisecond), repeat(2, 0, step{what: "send", n: 1}),
			[]step{{what: "refused", send: 900 * time.Millisecond, seen: 920 * time.Millisecond, n: 1},
				{what: "refused", send: 950 * time.Millisecond, seen: 970 * time.Millisecond, n: 1},
				{what: "tick", seen: 1300 * time.Millisecond}}))
		if odds := e.noise.odds(); odds < hintOdds || odds >= noiseOdds {
			t.Fatalf("odds after the epoch = %v, want a hint of noise (%v to %v)", odds, hintOdds, noiseOdds)
		}
		if got := e.pace(); tt.want > 0 && got != tt.want || tt.want == 0 && got > tt.most {
			t.Errorf("top %v: pace = %v, want %v (0: a cut, to %v at most)", tt.top, got, tt.want, tt.most)
		}
	}
}

// TestNoiseUndoneOnTheWayUp: a known noise level, a cut (a chance run of
// refusals over it), and a climb back whose spans bring refusals the
// level explains: once the rates tried show noise, the pace goes back to
// where the cut found it.
func TestNoiseUndoneOnTheWayUp(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 20, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	e.noise = noise{level: 0.1, ans: 100, nays: 10, top: math.Inf(1), n: 2,
		log: [24]tried{{rate: 30, got: 27, ans: 20, nays: 2}, {rate: 24, got: 21.6, ans: 20, nays: 2}}}
	var steps []step
	for i := range 20 {
		sent := time.Duration(i) * 50 * time.Millisecond
		what := "ok"
		if i%10 == 9 {
			what = "refused"
		}
		steps = append(steps, step{what: "send", n: 1}, step{what: what, send: sent, seen: sent + 10*time.Millisecond, n: 1})
	}
	play(&e, append(steps, step{what: "tick", seen: time.Second}))
	if !math.IsInf(e.pace(), 1) {
		t.Errorf("pace after the span = %v, want none again", e.pace())
	}
}

// TestNoiseWithNoPace: with no pace and a noise level known, the level is
// measured over recent answers, and forgotten once they are not refused.
func TestNoiseWithNoPace(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.noise = noise{level: 0.1, ans: 100, nays: 10}
	for s := range 20 {
		start := at(time.Duration(s) * time.Second)
		for i := range 100 {
			sent := start.Add(time.Duration(i) * 10 * time.Millisecond)
			e.sent(1)
			e.admitted(sent.Add(5*time.Millisecond), sent, 1)
		}
		e.tick(start.Add(time.Second))
	}
	if e.noise.level != 0 {
		t.Errorf("noise level after 2000 answers with none refused = %v, want it forgotten", e.noise.level)
	}
}

// TestAlikeOutlier: one epoch refused far more than the share noise
// refuses everywhere else (5 of 9, against 1 in 16 at paces near a limit)
// is no noise's, however many epochs dilute it in the sum: a sliding log
// still full from the opening's flood so outweighed a limit of 20 a second.
func TestAlikeOutlier(t *testing.T) {
	log := []tried{{rate: 1.25, ans: 9, nays: 5}}
	for range 16 {
		log = append(log, tried{rate: 20, ans: 16, nays: 0})
	}
	log = append(log, tried{rate: 21, ans: 16, nays: 1}, tried{rate: 20.5, ans: 16, nays: 1})
	ans, nays := 0.0, 0.0
	for _, e := range log {
		ans, nays = ans+e.ans, nays+e.nays
	}
	if alike(log, nays/ans) {
		t.Errorf("an epoch refused 5 of 9 among %d refused %.0f of %.0f: alike, want not", len(log)-1, nays-5, ans-9)
	}
	if !alike(log[1:], (nays-5)/(ans-9)) {
		t.Error("without it: not alike, want alike")
	}
}
