package pace

import (
	"math"
	"time"
)

// The cut: what the estimator makes of a refusal episode once its hold is
// over (see estimator.refused).

// deciding reports whether a refusal episode's cut is due at now.
func (e *estimator) deciding(now time.Time) bool {
	return !e.cut.decideAt.IsZero() && !now.Before(e.cut.decideAt)
}

// decide makes the cut of a refusal episode (bracket says how deep), and
// the rate it counts as refused becomes the one the pace climbs back
// towards. An epoch with too few answers to say anything cuts nothing and
// goes on, unless its refusal came over a pace held (back to that) or
// two thirds of it were refused, two at least (halved). Each epoch is logged
// for the noise test (see noise.odds): once refusals are shown to come
// whatever the pace the cuts are undone, and while that is only likelier
// than a limit the pace probes over the rates tried instead of cutting.
// A server that admitted nothing after a cut makes the holds a whole
// span. Cuts in a row go deeper, and a long horizon refused all along
// bounds them by what the server let through (see longRun.rate).
func (e *estimator) decide(now time.Time) {
	cut, searching, climbed := e.cut, e.searching, e.climbed
	e.cut, e.rate, e.hedge = pending{}, cut.rate, hedge{} // a refusal: any hedge is done with
	e.searching, e.climbed = false, false
	if r, measured, ok := e.unpaced(cut); ok {
		// The first refusal of all, its hint a window's, or one again
		// with the tracker following the window the refusals tell:
		// what the server took shows its rate; above it lies refusal.
		e.noise.record(now, cut.sentRate, cut.rate, &e.ep)
		r = cut.stayFloor(r)
		e.bad, e.climbs, e.downs, e.measured, e.sinceProbe = r, 0, 1, measured, 0
		e.shift(now, max(cutTo*r, minRate, e.floor))
		return
	}
	// Refused again after a cut, all that was sent (what is not refused
	// yet is on its way: a refusal comes back at once).
	locked := e.ep.admitted == 0 && e.ep.refused >= e.ep.sent && e.ep.answers >= minLocked && e.bad > 0
	if e.inWake(cut) {
		e.ep.held += cut.decideAt.Sub(cut.at)
		e.searching, e.climbed = searching, climbed // nothing changed: the search goes on
		return
	}
	_, _, full := e.fullRate(cut)
	_, dry := e.dryRate(cut)
	if e.ep.answers < minAnswers && !e.opening(cut) && !locked && !e.overHeld(cut.sentRate) && !full && !dry {
		if e.goOn(cut); e.rate == cut.rate {
			e.searching, e.climbed = searching, climbed // nothing changed: the search goes on
		}
		return
	}
	if locked {
		e.locked++ // the next hold is a whole span
	} else if e.locked = 0; e.ep.held <= cut.at.Sub(e.ep.start)/2 {
		e.noise.record(now, cut.sentRate, cut.rate, &e.ep)
		switch odds := e.noise.odds(); {
		case odds >= noiseOdds:
			// The cuts bought nothing: refusals come whatever the
			// pace, and say nothing of a limit.
			e.undo(now, e.noise.learn())
			return
		case odds >= hintOdds && min(e.noise.probe(), e.ceil) >= 1.5*cut.sentRate:
			// Likelier noise than not: a probe well over the rates
			// tried tells, where a cut would only starve the run.
			e.shift(now, min(e.noise.probe(), e.ceil))
			return
		}
	}
	if e.overHeld(cut.sentRate) {
		e.stepNay = e.nayAt // its run of refusals is a wake (see inWake)
	}
	next, bad := e.bounded(now, cut)
	if cut.sentRate <= e.good || (bad > 0 && e.good >= bad) {
		e.good = 0 // refused at a pace once held: a burst allowance held it
	}
	next = max(next, e.least(cut))
	e.searching = e.searching && !e.measured && e.good > 0 && next == e.good // bracket's, if the bounds kept it
	if e.probing {
		e.patience = min(2*e.patience, maxPatience) // a probe failed: probe more rarely
	}
	e.downs++
	e.bad, e.held, e.sinceProbe = bad, 0, 0
	e.shift(now, next)
}

// stayFloor is r, no lower than the rate the stay late probes showed
// admits, where they showed one: what the server took meanwhile is what a
// lane still finding it sent.
func (c pending) stayFloor(r float64) float64 {
	if c.stayed {
		return max(r, min(c.tracked, c.rate))
	}
	return r
}

// hinted returns, for the first refusal of all (no pace yet), the
// server's rate as its hint shows it, when that is far under what the
// first second's measure may cut to (see bracket: a quarter of the rate
// sent): what the server took of what was sent before the refusal over
// the window the hint shows, as long as the hint at least (a window
// lasts at least as long as it says to wait) or the time the epoch took
// to be refused. What was sent and not refused counts as taken: answers
// slower than the hint are yet to come, and a refusal comes back at once.
// A hint of a second or less, or none, shows no window longer than the
// first second's; nor does one for a request bigger than the average of
// those sent: it says when so many units fit (a sliding counter's reach
// is two windows), not how long the window is. Nor is it taken when the
// refusal's headers told the window: the lane's tracker follows what that
// has left, and knows it better (a fixed window's edges, say).
func (e *estimator) hinted(cut pending) (float64, bool) {
	if !math.IsInf(cut.rate, 1) || cut.hint <= minSpan || cut.shown || cut.n*float64(cut.sends) > cut.sent {
		return 0, false
	}
	took := cut.sent - e.ep.refused
	elapsed := cut.at.Sub(e.ep.start) - e.ep.held
	r := took / max(elapsed, cut.hint).Seconds()
	return r, took > 0 && r < cutDeep*cut.sentRate
}

// bounded is bracket's cut with its bounds: a long horizon refused all
// along bounds it by what the server let through there (the whole run,
// while it is shorter than that horizon: see sinceFirst); cut after cut
// with much refused, it goes deeper; the first at the told limit goes
// two and a half percent under it.
func (e *estimator) bounded(now time.Time, cut pending) (next, bad float64) {
	next, bad = e.bracket(cut)
	r, ok := e.long.rate(now, e.span, e.good)
	if !ok && e.hedge.rate == 0 && e.lockedOut && e.ep.admitted < e.full.burst {
		// The whole run, once a window longer than a second's showed:
		// not where the epoch took a whole burst (a window that
		// reopened whole counts it twice in less than two windows: 200
		// a 10 s, 1,699/min at 13.9 s), nor under a hedge (a ban's run
		// lets through less than its window: 1.33x -> 2.28x).
		r, ok = e.long.sinceFirst(now, e.span)
	}
	if ok && r < sustainedShare*cut.sentRate && cutTo*r < next && e.keptUp(cut) <= r {
		// Refused all along a horizon of many spans, the server let
		// through clearly less than was sent: that is its rate, however
		// each epoch's burst allowance made a pace look held. Not where
		// it let through more than that in the seconds before the
		// refusal, its burst aside (see keptUp): refusals came in both
		// halves but it was not full between. (nginx's limit_req with no
		// burst refuses two sent close together at any pace; over a climb
		// from 5 a second to 9, 7 a second looked like its rate.)
		next, bad = cutTo*r, min(bad, r)
	}
	next, bad = e.measuredCut(cut, next, bad)
	next = e.confirmed(cut, next)
	// Cut after cut with no step up between, with much refused: the cuts
	// were too shallow to get under the limit; each goes deeper (a tenth,
	// a fifth, two fifths, half at most of the rate sent). A few refused
	// say the pace is only a little over: the measure alone decides.
	// No deeper than a little under the rate last held for a span (good):
	// answers slower than refusals leave an epoch's answers all refusals
	// for as long as they take, and cut after cut at 1.5 s answers, each
	// epoch's one answer a refusal, took the pace to 798/min, under the
	// 1200/min a GCRA had held (1.17x).
	if e.ep.share() >= deepShare && !e.ep.lumpy() && !e.stepRefused(cut) {
		deep := cut.sentRate * max(1-(1-cutLeast)*float64(int(1)<<min(e.downs, 3)), 0.5)
		next = min(next, max(deep, cutTo*e.good))
	}
	if e.toldFirst(cut) {
		// Refused at the pace the user gave: a window's edge or long
		// prompts that did not fit, more likely than a wrong limit,
		// and what was admitted is a poor measure while answers are
		// slow or the windows held sends. The pace goes 2.5% under
		// it, where a cut to a twentieth under climbed back first
		// (halfway), once that step was worth its hold: near the
		// limit, settled, to probe it now and then. (A sliding counter
		// admits L-1 a window, 2-5% under a told L: a twentieth under
		// held 10 s at 3% under what it admits.) Refused again before
		// a span holds, the cuts are measured.
		next, bad = max(next, toldCut*cut.rate), max(bad, cut.rate)
	}
	return next, bad
}

// bracket returns the pace after the cut and the rate to count as
// refused. Before its first refusal an epoch admits all it sends, so what
// it admitted says something of the server's rate only over a span or
// more: then the cut is to a little under it. A refusal sooner after a
// step up says only that the rate lies between the pace held before
// (good) and the one refused: the search goes on between them. The first
// refusal of all, with no pace yet, says nothing of the rate but that the
// server's allowance is spent: the pace starts from what it admitted in a
// second and searches up from there at the doubling step, a big one but
// when a fine hint covered the rest of that second. An epoch mostly held
// at a short wall (runs of refusals under dryMost) may have met a ban
// after a window's worth as likely as a window as long as the epoch: the
// cut is to the rate over the holds, but the rate refused is what was
// admitted out of them, which the climb goes back towards. (Banned 2 s
// after 20 in a second, the epoch's 20 per 3 s became the rate refused,
// and the pace crept at a third of the rate for 20 s.)
func (e *estimator) bracket(cut pending) (next, bad float64) {
	next, bad = cutLeast*cut.sentRate, cut.sentRate
	elapsed := cut.at.Sub(e.ep.start) - e.ep.held
	enough := e.ep.answers >= minAnswers && !e.ep.lumpy()
	var okRate float64 // what the server admitted over the epoch, if that measures it
	var open float64   // what it admitted out of a ban's holds, if it may be one
	measured := false
	switch {
	case (e.ep.answers >= minAnswers || e.opening(cut)) && math.IsInf(cut.rate, 1):
		e.climbs = 3
		if cut.fine && !cut.shown && elapsed+cut.hint >= minSpan {
			// The server's own hint covers the rest of the second: it
			// let through no more than that in it, and the measure is
			// no guess. Steps up from it start small.
			e.climbs = 0
		}
		took := e.ep.admitted
		if e.ep.answers < minAnswers || cut.decideAt.Sub(cut.at) < e.rtt {
			// Answers slower than the hold (see opening): what was
			// sent last before the refusal is yet to be answered.
			took = cut.sent - e.ep.refused
		}
		return max(took/max(elapsed, minSpan).Seconds(), cutDeep*cut.sentRate, e.single), 0
	case enough && e.ep.nays >= 2 && (e.ep.refused > e.ep.admitted || e.ep.held > elapsed) && (elapsed >= e.span || !e.overHeld(cut.sentRate)) &&
		cut.at.Sub(e.ep.start) > e.rtt:
		// Mostly refused or held: the pace is far over. What the server
		// let through over the whole epoch, holds and all, is its
		// measure; but not of an epoch shorter than a span just over
		// a pace held (a long prompt or two refused outweigh in tokens
		// what a fraction of a second admitted): the search goes on
		// between the two. Nor of one refused before it lasted a round
		// trip: what it admitted, one instant sent.
		okRate, measured = e.ep.admitted/max(cut.at.Sub(e.ep.start)-e.rtt, minSpan).Seconds(), true
		if e.ep.walled > 0 && e.ep.dry < dryMost && elapsed >= e.span {
			open = e.ep.admitted / max(elapsed-e.rtt, minSpan).Seconds()
			okRate = e.windowRate(okRate, cut.at.Sub(e.ep.start), cut.at)
		}
	case enough && elapsed >= e.span:
		okRate, measured = e.ep.admitted/max(elapsed-e.rtt, minSpan).Seconds(), true
	case e.overHeld(cut.sentRate):
		next = max(e.good, cutDeep*cut.sentRate)
		e.searching = next == e.good && e.goodClimbed
	}
	if measured {
		next = min(max(cutTo*okRate, cutDeep*cut.sentRate), next)
		bad = min(bad, max(okRate, open, next))
		e.hedged(okRate, open, cut.sentRate, cut.at.Sub(e.ep.start))
	}
	e.climbs = 0
	return next, bad
}

// toldFirst reports whether cut is the first in a row at the told limit
// (within a tenth), the pace used. Told nothing, cut after cut, or
// refused while sending well under the pace (the told limit is wrong),
// it is not.
func (e *estimator) toldFirst(cut pending) bool {
	return !math.IsInf(e.ceil, 1) && e.downs == 0 && cut.rate >= cutLeast*e.ceil && cut.sentRate >= cutLeast*cut.rate
}

// share is the share of the units answered in the epoch that were refused.
func (ep *epoch) share() float64 { return ep.refused / max(ep.admitted+ep.refused, 1) }

// lumpy reports whether the epoch answered too few units for its shares to
// measure the server: fewer than minAnswers of its biggest request's. A
// long prompt or two refused outweigh in tokens all the short ones a
// fraction of a second admitted, and what it admitted says nothing of the
// rate, only that the long ones did not fit yet. (A token window of 40,000
// a 10 s, told, refused two prompts of 2,400 and 4,300 tokens 0.7 s into
// an epoch at its limit: measured there, the pace went to a quarter of
// the limit and took 85 s to climb back, 2x the reference.) A lumpy epoch
// is cut as one that held too short to measure, a tenth under the rate
// sent. Requests all weigh alike, and none is lumpy: their shares stand
// as before (the share refused deepens cuts in a row from two answers on).
func (ep *epoch) lumpy() bool {
	return ep.biggest*float64(ep.sends) > ep.sent && ep.admitted+ep.refused < minAnswers*ep.biggest
}
