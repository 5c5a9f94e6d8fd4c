package pace

import (
	"math"
	"testing"
	"time"
)

// t0 is the start of every table: the policies read no clock.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// step is one event fed to an estimator: n units sent at send, and what
// came of them at seen ("ok", "refused"), or a tick at seen ("tick").
type step struct {
	what       string
	send, seen time.Duration
	n          float64
	hint       time.Duration
}

func play(e *estimator, steps []step) {
	for _, s := range steps {
		switch s.what {
		case "send":
			e.sent(s.n)
		case "ok":
			e.admitted(at(s.seen), at(s.send), s.n)
		case "refused":
			e.refused(at(s.seen), at(s.send), s.n, s.hint)
		case "tick":
			e.tick(at(s.seen))
		}
	}
}

// repeat returns k copies of s, the i-th shifted by i*every.
func repeat(k int, every time.Duration, s step) []step {
	out := make([]step, k)
	for i := range out {
		out[i] = s
		out[i].send += time.Duration(i) * every
		out[i].seen += time.Duration(i) * every
	}
	return out
}

// sendOK returns k requests sent every every, each admitted 10 ms later.
func sendOK(k int, every time.Duration) []step {
	var out []step
	for i := range k {
		sent := time.Duration(i) * every
		out = append(out, step{what: "send", n: 1}, step{what: "ok", send: sent, seen: sent + 10*time.Millisecond, n: 1})
	}
	return out
}

func cat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestEstimator(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name  string
		start estimator
		steps []step
		want  float64 // the pace after the steps, units a second
	}{
		{"untold: no pace until a refusal", newEstimator(inf, true, t0),
			cat(repeat(100, 10*time.Millisecond, step{what: "send", n: 1}), []step{{what: "tick", seen: 5 * time.Second}}), inf},
		{"told: the ceiling, while nothing is refused", newEstimator(10, true, t0),
			cat(repeat(50, 100*time.Millisecond, step{what: "send", n: 1}), []step{{what: "tick", seen: 5 * time.Second}}), 10},
		{"a refusal drops the pace a tenth at once, the cut waits for the hold",
			newEstimator(10, true, t0), cat(
				repeat(20, 100*time.Millisecond, step{what: "send", n: 1}),
				repeat(19, 100*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				[]step{{what: "refused", send: 1900 * time.Millisecond, seen: 1920 * time.Millisecond, n: 1}}), 9},
		{"a burst at the start does not set the pace: a quarter of what was sent at most",
			newEstimator(inf, true, t0), cat(
				[]step{{what: "send", n: 32}},
				repeat(5, 0, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				repeat(27, 0, step{what: "refused", seen: 20 * time.Millisecond, n: 1}),
				// The first refusal of all holds a whole span: decided at 1.02 s.
				[]step{{what: "tick", seen: 1100 * time.Millisecond}}), 8},
		{"the cut is to a little under what got through over the epoch",
			newEstimator(97, true, t0), cat(
				repeat(40, 0, step{what: "send", n: 1}),
				repeat(20, 10*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				[]step{{what: "refused", send: 1200 * time.Millisecond, seen: 1210 * time.Millisecond, n: 1}},
				// 40 sent and 20 admitted of those sent by 1.19 s (the
				// refusal, less the 20 ms round trip): 0.95 * 20/1.19
				// (more than a quarter of the 33/s sent).
				[]step{{what: "tick", seen: 1500 * time.Millisecond}}), cutTo * 20 / 1.19},
		{"a refusal soon after a step up: back to the pace held, the search goes on between",
			estimator{ceil: inf, adapt: true, rate: 30, good: 20, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}, cat(
				repeat(10, 30*time.Millisecond, step{what: "send", n: 1}),
				repeat(9, 30*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				[]step{{what: "refused", send: 270 * time.Millisecond, seen: 290 * time.Millisecond, n: 1}},
				[]step{{what: "tick", seen: 600 * time.Millisecond}}), 20},
		{"the first refusal of all: what was admitted in a second, then a doubling search",
			newEstimator(inf, true, t0), cat(
				[]step{{what: "send", n: 12}},
				repeat(8, 0, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				repeat(4, 0, step{what: "refused", seen: 20 * time.Millisecond, n: 1}),
				[]step{{what: "tick", seen: 1100 * time.Millisecond}}, // a whole span's hold, then decided
				sendOK(20, 100*time.Millisecond),
				[]step{{what: "tick", seen: 2100 * time.Millisecond}}), 8 * 1.4},
		{"a refusal of a request sent before the epoch is old news",
			estimator{ceil: inf, adapt: true, rate: 10, span: time.Second, patience: firstPatience, ep: epoch{start: at(time.Second)}},
			[]step{{what: "refused", send: 900 * time.Millisecond, seen: 1100 * time.Millisecond, n: 1}}, 10},
		{"a span held and used climbs a step towards the rate refused",
			estimator{ceil: inf, adapt: true, rate: 10, bad: 20, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}},
			cat(sendOK(10, 100*time.Millisecond), []step{{what: "tick", seen: time.Second}}), 10 * (1 + (climb-1)/2)},
		{"a span not used does not climb: raising a pace nobody reached tests nothing",
			estimator{ceil: inf, adapt: true, rate: 10, bad: 20, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}},
			cat(repeat(3, 100*time.Millisecond, step{what: "send", n: 1}), []step{{what: "tick", seen: time.Second}}), 10},
		{"long prompts leave part of a pace unused: up to the biggest is allowed for",
			// 8,000 a second, 3 of 2,000 and 3 of 300 sent over the second
			// (6,900): under 0.9 of the pace, but the next long one would
			// not have fit.
			estimator{ceil: inf, adapt: true, rate: 8000, bad: 16000, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}},
			cat(repeat(3, 300*time.Millisecond, step{what: "send", n: 2000}), repeat(3, 300*time.Millisecond, step{what: "send", n: 300}),
				repeat(8, 100*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 862.5}),
				[]step{{what: "tick", seen: time.Second}}), 8000 * (1 + (climb-1)/2)},
		{"a pace a request waited for (its own second) was reached, whatever was sent",
			estimator{ceil: inf, adapt: true, rate: 8000, bad: 16000, span: time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0, pressed: true}},
			cat(repeat(2, 500*time.Millisecond, step{what: "send", n: 2000}),
				repeat(8, 100*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 500}),
				[]step{{what: "tick", seen: time.Second}}), 8000 * (1 + (climb-1)/2)},
		{"settled near the rate refused: it holds for its patience",
			estimator{ceil: inf, adapt: true, rate: 19.5, bad: 20, span: time.Second, patience: 2, ep: epoch{start: t0, judged: t0}},
			cat(sendOK(40, 100*time.Millisecond),
				[]step{{what: "tick", seen: time.Second}, {what: "tick", seen: 2 * time.Second}}), 19.5},
		{"settled, its patience over: a probe at the rate refused",
			estimator{ceil: inf, adapt: true, rate: 19.5, bad: 20, span: time.Second, patience: 2, ep: epoch{start: t0, judged: t0}},
			cat(sendOK(60, 50*time.Millisecond),
				[]step{{what: "tick", seen: time.Second}, {what: "tick", seen: 2 * time.Second}, {what: "tick", seen: 3 * time.Second}}), 20},
		{"settled at a limit of a minute: the patience counts requests too, each failed probe a refusal",
			// 0.39 a second settled under 0.4 refused, one answered each
			// 2.5 s: 6 spans held after the epoch's first 8 answers, but
			// 12 requests, not the 32 a probe waits for.
			estimator{ceil: inf, adapt: true, rate: 0.39, bad: 0.4, span: time.Second, patience: 4, ep: epoch{start: t0, judged: t0}},
			cat(repeat(12, 2500*time.Millisecond, step{what: "send", n: 1}),
				repeat(12, 2500*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				repeat(6, time.Second, step{what: "tick", seen: 28 * time.Second})), 0.39},
		{"settled, its patience at its longest: a probe after maxProbeWait requests, not 8 a span of it",
			estimator{ceil: inf, adapt: true, rate: 0.39, bad: 0.4, span: time.Second, patience: maxPatience, held: maxPatience,
				sinceProbe: maxProbeWait, ep: epoch{start: t0, judged: t0}},
			cat(repeat(12, 2500*time.Millisecond, step{what: "send", n: 1}),
				repeat(12, 2500*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				[]step{{what: "tick", seen: 30 * time.Second}}), 0.4},
		{"a probe at the rate refused that holds: the limit rose, climb on",
			estimator{ceil: inf, adapt: true, rate: 20, bad: 20, span: time.Second, patience: 2, ep: epoch{start: t0, judged: t0}},
			cat(sendOK(20, 50*time.Millisecond), []step{{what: "tick", seen: time.Second}}), 20 * (1 + (climb-1)/2)},
		{"never over the ceiling",
			estimator{ceil: 10.2, adapt: true, rate: 10, bad: 20, span: time.Second, patience: 2, ep: epoch{start: t0, judged: t0}},
			cat(sendOK(10, 100*time.Millisecond), []step{{what: "tick", seen: time.Second}}), 10.2},
		{"not adapting: refusals change nothing", newEstimator(10, false, t0), cat(
			repeat(20, 100*time.Millisecond, step{what: "send", n: 1}),
			repeat(10, 100*time.Millisecond, step{what: "refused", seen: 10 * time.Millisecond, n: 1}),
			[]step{{what: "tick", seen: 5 * time.Second}}), 10},
		{"too few answers say nothing: no cut",
			newEstimator(10, true, t0), cat(
				repeat(10, 100*time.Millisecond, step{what: "send", n: 1}),
				repeat(3, 100*time.Millisecond, step{what: "ok", seen: 20 * time.Millisecond, n: 1}),
				[]step{{what: "refused", send: 900 * time.Millisecond, seen: 910 * time.Millisecond, n: 1}},
				[]step{{what: "tick", seen: 1200 * time.Millisecond}}), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.start
			play(&e, tt.steps)
			if got := e.pace(); math.Abs(got-tt.want) > 1e-6*max(1, tt.want) && !(math.IsInf(got, 1) && math.IsInf(tt.want, 1)) {
				t.Errorf("pace after %d steps = %v, want %v (good %v, bad %v, span %v)", len(tt.steps), got, tt.want, e.good, e.bad, e.span)
			}
		})
	}
}

// TestEstimatorEpochOfAnInstant: refused in the instant its epoch began
// (a refusal comes back at once, an answer a round trip later), an epoch
// has measured no rate: what it admitted is what one instant sent, and
// taken over a second it cut a told-nothing token pace to a quarter
// (against a sliding second of 10,000 tokens, 1.5-2.1x in one run of
// three, climbing back).
func TestEstimatorEpochOfAnInstant(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 15000, span: 2 * time.Second, patience: firstPatience, ep: epoch{start: t0, judged: t0}}
	e.sent(3300)
	e.refused(t0, t0, 3300, 0)
	for range 10 {
		e.sent(60)
		e.admitted(at(50*time.Millisecond), t0, 60)
	}
	e.sent(3300)
	e.refused(at(10*time.Millisecond), t0, 3300, 0)
	e.tick(at(time.Second))
	if e.pace() < 7000 {
		t.Errorf("pace = %v, want a tenth or so under the 15,000 sent, not what one instant admitted", e.pace())
	}
}

// TestLongAnswersSayEnough: a token pace whose lane's mean request is
// short says whether it holds by the units its answers weigh, not by their
// number alone: once only long prompts are left, four of 4,000 tokens
// admitted over a few spans (32 mean requests of 500) let it step up,
// where waiting for eight of them took 25 s a step.
func TestLongAnswersSayEnough(t *testing.T) {
	e := estimator{ceil: math.Inf(1), adapt: true, rate: 1500, span: time.Second, patience: firstPatience}
	for range 56 { // the short prompts before, 56 of 75 tokens and 8 of 4,000: a mean of 565
		e.sent(75)
	}
	for range 8 {
		e.sent(4000)
	}
	e.ep = epoch{start: t0, judged: t0}
	for i := range 4 { // one long prompt each 2.7 s, at the pace
		sent := at(time.Duration(i) * 2700 * time.Millisecond)
		e.sent(4000)
		e.admitted(sent.Add(50*time.Millisecond), sent, 4000)
	}
	e.tick(at(11 * time.Second))
	if got := e.pace(); got <= 1500 {
		t.Errorf("pace after four long prompts admitted at it over 11 s = %v, want a step up from 1500", got)
	}
}
