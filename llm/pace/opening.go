package pace

import (
	"math"
	"time"
)

// The opening: the first refusal of all, with no pace yet, and an epoch
// whose refusal came with too few answers to say anything (see decide).

// opening reports whether cut is the first of all (no pace yet) after
// requests enough to measure, if not answers enough: answers slower than
// the hold (latency over the window) are yet to come, and those not
// refused by now count as taken, since a refusal comes back at once.
// (Going on with no pace until they came, the lane was refused four
// times more in the first second and a half.) Not when the refusal's
// headers told the window: the lane's tracker holds the sends to it
// meanwhile, and a window of a minute is no second's.
func (e *estimator) opening(cut pending) bool {
	return math.IsInf(cut.rate, 1) && cut.sends >= minAnswers && !cut.shown
}

// goOn decides an episode whose epoch had too few answers to say
// anything: the epoch goes on, and the next refusal decides with more;
// but mostly refused (two thirds of what was answered, two at least, and
// half of what was sent), the pace is far over and halves; with none yet,
// one is set (see pacedOpening). Answers
// slower than the window are not refusals: a refusal comes back at once, and
// those refused before any answer came back are no reason to halve the
// pace, told or found.
func (e *estimator) goOn(cut pending) {
	e.ep.held += cut.decideAt.Sub(cut.at)
	if e.ep.refused > 2*e.ep.admitted && e.ep.nays >= 2 && 2*e.ep.refused >= e.ep.sent {
		if e.good == 0 && e.bad == 0 && !math.IsInf(cut.rate, 1) && !e.drained {
			// Mostly refused at the first pace, nothing yet known of the
			// rate: the opening burst may still count against it, at a
			// server that counts what it refuses. Once, the next refusal
			// holds a whole span instead of the pace halving.
			e.drain, e.drained = true, true
			e.shift(cut.decideAt, cut.rate) // and what follows is judged afresh
			return
		}
		if math.IsInf(cut.rate, 1) {
			e.pacedOpening(cut)
			return
		}
		e.rate = max(cut.rate/2, e.least(cut))
	}
}

// pacedOpening decides the first refusal of all where the server took
// under a third of the few sent at once, too few to measure (see
// opening): it holds less than that at once, and the next such bunch, with
// no pace, is refused as surely. The pace goes to what it took over the
// hold, or the cut the refusal made, the greater, and climbs from there
// at the doubling step, each step judged on half the answers (see
// stepAnswers). (nginx's limit_req with no burst, the opening's
// four at once, one admitted, went back to no pace: of the next four at
// once all were refused, seven of the run's first eight sent.) So too
// where the refusal's headers told the window: a window that refused most
// of a bunch sent into it takes no bunch, whatever it says it holds (a
// GCRA with no burst, told as a window of 5 a second, had the tracker
// send 5 at once at each reset).
func (e *estimator) pacedOpening(cut pending) {
	took := max(cut.sent-e.ep.refused, 0)
	r := max(cutLeast*cut.sentRate, took/max(cut.decideAt.Sub(cut.at), quickHold).Seconds(), e.least(cut))
	e.climbs, e.downs, e.sparse = 3, 1, true
	e.shift(cut.decideAt, r)
}

// stepAnswers is how many answers a step up waits for: half of
// minAnswers where the opening showed no burst (see pacedOpening, and
// capDropped). Such a server refuses any request sent sooner after the one
// before than its rate allows, so at a pace over its rate the first
// request is refused; where a burst hides an overshoot until it is spent,
// eight are needed to say a step held. (Eight at 4 a second took 2.2 s a
// step at nginx's 10 a second with no burst: 1.15x the ideal, 1.09x on
// half, in the wide zoo.)
func (e *estimator) stepAnswers() int {
	if e.sparse {
		return minAnswers / 2
	}
	return minAnswers
}

// capDropped brings back the estimator a concurrency cap set aside, the
// cap dropped as a mistake: its refusals were a rate limit's with no
// burst, which refuses two sent together as a cap of one does. Found in
// the opening, before any pace was, the climb goes on as a paced
// opening's (see pacedOpening).
func (e *estimator) capDropped(now time.Time) {
	e.cut = pending{} // an episode it was in is over
	if e.good == 0 && e.bad == 0 && !math.IsInf(e.rate, 1) {
		e.climbs, e.sparse = 3, true
	}
	e.shift(now, e.rate)
}
