package pace

import (
	"math"
	"time"
)

// How the estimator climbs: whether a pace was used (see tick), the next
// pace after one held (up, step), and what a run of refusals with no hint
// says of the window (dryRun).

// used reports whether the pace was used since the epoch began: raising
// a pace nobody reached tests nothing. Requests of many units leave part
// of a pace unused that the next one did not fit in (a long prompt waits
// for a whole one of its size): up to the biggest is allowed for, and a
// request that waited for the pace's own second shows it was reached.
// The time held at a wall is no time the pace could be used in (a 2 s
// ban at the start of an epoch at 14/s left it unused for good: 211 sent
// in 16.7 s). Other holds count: left out, an epoch at the limit held by
// slow answers' refusals looked used, and stepped into a ban.
func (e *estimator) used(now time.Time) bool {
	return e.ep.pressed || e.ep.sent+e.ep.biggest >= 0.9*e.rate*max(now.Sub(e.ep.start)-e.ep.walled, 0).Seconds()
}

// up returns the next pace after one held for a span: a step towards the
// rate last refused (halfway at most); when settled near it, the same pace
// for patience spans, then a probe at it (worth its cost, see worthProbe);
// with no refusal known, a step.
func (e *estimator) up(now time.Time) float64 {
	if e.rate >= e.good {
		if e.rate > e.good {
			e.goodClimbed = e.climbed // back at good, it stays what it was
		}
		e.good, e.goodFor = e.rate, now.Sub(e.ep.start)
	}
	switch {
	case e.bad == 0:
		return e.rate * e.step()
	case e.rate >= e.bad && e.rate >= e.ceil:
		// A probe at the told limit held: no pace goes past it, and a
		// span held says little (2% over what a server admits takes
		// seconds to be refused). The refusal and the patience stand.
		e.held++
		return e.rate
	case e.rate >= e.bad && e.measured && e.sinceProbe < 2*maxProbeWait:
		// A probe at a rate measured between two refusals held: so it
		// should, the server's rate within a request, and the burst
		// that came back under the cut would hold it a while if it were
		// over. It stays, and climbs past it only once it has held
		// many requests: a climb over the server's rate is refused,
		// if only once its burst is spent.
		e.held++
		return e.rate
	case e.rate >= e.bad:
		// A probe at the refused rate held: the limit has risen, or the
		// refusal measured it low. Climb, and probe sooner next time.
		e.bad, e.patience, e.climbs = 0, firstPatience, 0
		return e.rate * e.step()
	case e.rate < nearBad*e.bad:
		return e.towards(now)
	case e.held < e.patience || e.sinceProbe < min(minAnswers*e.patience, maxProbeWait) || !e.worthProbe(now):
		// Its patience counts spans and, where a span holds few
		// requests (a limit of a minute), requests too: each probe that
		// fails costs a refusal, and gains little. (No more than
		// maxProbeWait requests: at two a minute, 512 would be 4 hours.)
		e.held++
		return e.rate
	}
	e.held = 0
	return e.bad
}

// towards returns the next pace from one held under the rate refused, by
// a step that grows while it holds: a probe that fails costs a hold, so
// the first ones are small (the limit is often just over the pace held),
// and none goes before it is worth its hold (see worth). A cut that
// hedged against a window longer than a ban goes back at once, once the
// server shows it was a ban (see unhedged).
func (e *estimator) towards(now time.Time) float64 {
	if back, ok := e.unhedged(now); ok {
		e.climbs++
		return back
	}
	next := min((e.rate+e.bad)/2, e.rate*e.factor())
	if e.bad > farUnder*e.rate || e.searching && e.cost <= quickHold {
		// Far under (see farUnder), or anywhere between with a refusal
		// that costs little (see searching): halfway, as rates go. A
		// pace a cut measured is likely near the server's rate, and
		// where a refusal costs a ban or a hint's wait the steps stay
		// small: at a penalty box held at its limit, a probe halfway up
		// was worth its 2 s ban 13 s on, and cost one (1.14x -> 1.21x).
		next = math.Sqrt(e.rate * e.bad)
	}
	if !e.worth(now, next) {
		return e.rate
	}
	e.climbs++
	return next
}

// step is the factor of the next step up: a twentieth, doubling with each
// step in a row, up to twice the pace, so that a pace far under the limit
// finds it in a few spans, and one just under it probes by little.
func (e *estimator) step() float64 {
	f := e.factor()
	e.climbs++
	return f
}

// factor is the factor of the next step up, not taken yet.
func (e *estimator) factor() float64 {
	return min(1+(climb-1)/2*float64(int(1)<<min(e.climbs, 5)), 2)
}

// worth reports whether a step up from the pace to next, into rates a
// refusal has shown to lie near the limit, is worth what a refusal costs:
// the hold the last one set (a penalty box's ban, a minute's window's
// Retry-After), during which the lane sends nothing. It is, once the
// time since that refusal is the hold over the step's gain: what the
// step would have won since, had it held, pays for one more such hold.
// A probe a second over, a refusal costing a second's ban, waits 20 s;
// one costing a quarter second's hold, 5 s.
func (e *estimator) worth(now time.Time, next float64) bool { return e.worthTimes(now, next, 1) }

// worthTimes is worth with the cost counted times over.
func (e *estimator) worthTimes(now time.Time, next, times float64) bool {
	gain := next/e.rate - 1
	return gain > 0 && now.Sub(e.costAt).Seconds()*gain >= e.cost.Seconds()*times
}

// worthProbe reports whether a probe at the rate last refused is worth
// its cost, as a step is (see worth), the cost grown with each probe
// refused as patience is: a probe refused costs a hold, and the next
// waits twice as long. (Patience alone, in spans of a second, waited less
// than the first probe's worth: near a sliding counter's limit each
// probe of a 30 s run, 10 s apart, was refused.)
func (e *estimator) worthProbe(now time.Time) bool {
	return e.worthTimes(now, e.bad, float64(e.patience)/firstPatience)
}

// dryRun notes a refusal of a request sent at sentAt and returns how long
// the run of refusals it is in has lasted, nothing admitted between (by
// when the requests went; 0 while answers admitted are slower than the run
// and might yet come). Past lockout, the span is stretched over it: a
// server refusing all along for so long counts a window at least that long,
// and one with no hint says so no other way. (Cut after cut at a span of a
// second, a lane locked out of a minute's window took its pace to a tenth of
// the limit before the window ended, and took 8x to climb back.)
func (e *estimator) dryRun(sentAt time.Time) time.Duration {
	if e.nayAt.IsZero() || !e.nayAt.After(e.okAt) {
		e.nayAt, e.dryCut, e.runCut = sentAt, false, false
		return 0
	}
	d := sentAt.Sub(e.nayAt)
	if e.okAt.IsZero() || d < 2*e.rtt {
		return 0 // answers slower than the run: what was admitted meanwhile is not known yet
	}
	if d >= lockout {
		e.stretch(d)
		e.lockedOut = true
	}
	return d
}

// farUnder is how far under the rate refused a pace must be for its next
// step to go halfway there as rates go (the geometric mean): so far
// under, the search is far from done (a cut measured over a ban's holds,
// see bracket, or cuts in a row), and the first small steps of a climb,
// each waiting to be worth a refusal's hold (see worth), took 20 s to get
// from a third of the rate back to it.
const farUnder = 2

// answered counts an answer seen at now.
func (ep *epoch) answered(now time.Time) {
	if ep.answers == 0 {
		ep.first = now
	}
	ep.answers++
}

// heard returns how many requests of the epoch have said whether the pace
// holds: those answered, and those in flight for longer than a refusal
// takes to come back (a refusal comes back at once, an answer the model's
// latency later: not refused by then, they were admitted). Before any
// refusal was seen, its round trip is not known, and only answers count.
// (Waiting for their answers, an epoch at 3 a second answered 3 s late
// said nothing for 5.7 s.) A request admitted counts as many as its units
// are mean requests of the lane's: a long prompt of 4,000 tokens, where
// the mean is 500, says of a token pace what eight short ones do. (Once
// the short prompts were done, a token pace cut to a third of a window of
// 40,000 a 10 s sent a long one each 3 s, and each step up waited for
// eight of them: 25 s a step, 3x the reference.)
func (e *estimator) heard(now time.Time) int {
	elapsed := now.Sub(e.ep.start) - e.ep.held
	answers := max(e.ep.answers, int(e.ep.weight))
	if e.nayTrip == 0 || elapsed <= 0 {
		return answers
	}
	// Those sent within a refusal's round trip, at the epoch's rate of
	// requests (a pace of tokens counts units, not requests).
	young := int(math.Ceil(float64(e.ep.sends) * min(e.nayTrip.Seconds()/elapsed.Seconds(), 1)))
	return answers + max(e.ep.sends-e.ep.answers-young, 0)
}

// minUnit is the least a mean request weighs (see epoch.weight).
const minUnit = 1e-9
