package pace

import (
	"math"
	"time"
)

// What the server took between two of its refusals. Whatever its
// algorithm, a limiter that refuses a request is full at that instant (a
// bucket's or a GCRA's burst is spent, a window's room is taken), so what
// it admitted from one refusal to the next, over the time between, is what
// it lets through a second: within a request for a bucket or a GCRA,
// whatever its burst, and within a window's worth for a window. (Where it
// had room to spare in between, the pace well under its rate, it is the
// rate sent instead, which the server let through: a cut under it is a
// cut under what was sent.) A pace's own epoch, begun after a cut under
// the rate, is no such measure: the burst that came back meanwhile holds a
// probe over the rate for minutes. Refusals come back at once, so what was
// sent and not refused by the second refusal counts as taken, however
// slow the answers.

// dryMost is the longest run of refusals with nothing taken that bounds
// the rate (see dryRate). A bucket of 24 a minute ends such runs in 2.5 s;
// a fixed window or a sliding log of a minute, at their wall, after up to
// a minute: bounded by one request in so long, they took 2.3x their time
// (1.2x and 1.65x with 3 s, 1.8x and 1.65x with 5 s; the leaky bucket of a
// minute was refused twice as often with 2 s).
const dryMost = 3 * time.Second

// sinceFull counts the units sent and refused, and the time held, since
// the refusals marked (the first of each episode: see markFull).
type sinceFull struct {
	sent, nays float64       // units sent and refused, in all
	held       time.Duration // time held after refusals, in all
	last, dry  fullMark      // the refusal last marked; the first since which the server took nothing
	burst      float64       // units taken before the first refusal of all: the most the server holds
	first      time.Time     // when the request of that refusal went
	dryAfter   float64       // units taken from the refusal marked before dry (or the start) to it
	dryFloor   float64       // the least rate a bucket refills at to have taken dryAfter so (see outpaced)
	wallUntil  time.Time     // the end of the last hold at a wall (see wallHold)
	opened     time.Time     // when the first request admitted after a refusal went (see open)
	lastNay    time.Time     // when the newest request refused went
}

// fullMark is a refusal marked: when its request went, and the counts then.
type fullMark struct {
	at         time.Time // zero: none
	sent, nays float64
	held       time.Duration
	n          float64 // units of the request refused
}

// took returns the units the server took from mark m until now (sent and
// not refused), the time from m to at, the sending of a request refused,
// and that time less the holds in it; ok is false with no mark, or at
// before it.
func (f *sinceFull) took(m fullMark, at time.Time) (units float64, d, busy time.Duration, ok bool) {
	if m.at.IsZero() || !at.After(m.at) {
		return 0, 0, 0, false
	}
	d = at.Sub(m.at)
	return (f.sent - m.sent) - (f.nays - m.nays), d, max(d-(f.held-m.held), 0), true
}

// nay counts n units refused of a request sent at sentAt. One sent no
// later than a refusal marked counts before the mark, not since: the
// answers to what went at one instant come back in any order, and the
// rest of a burst refused after its first refusal is no sign that the
// server took nothing since. (A GCRA of 5 a second with no burst, sent 4
// at once and then 3 a second later, one of each admitted: the burst's
// two later refusals, counted since its first, made the next second look
// refused all along, and dryRate cut the pace to 56 a minute; the run took
// 3.9x the reference.)
func (f *sinceFull) nay(sentAt time.Time, n float64) {
	f.nays += n
	if sentAt.After(f.lastNay) {
		f.lastNay = sentAt
	}
	for _, m := range []*fullMark{&f.last, &f.dry} {
		if !m.at.IsZero() && !sentAt.After(m.at) {
			m.nays += n
		}
	}
	if !f.first.IsZero() && !sentAt.After(f.first) {
		f.burst -= n
	}
}

// markFull notes that the server was full when the request refused, sent
// at sentAt, went, and the lane holds for hold: the episode's cut learns
// what the server took since the refusal marked before, and how long it
// has taken nothing since the first of a run of refusals.
func (e *estimator) markFull(sentAt time.Time, hold time.Duration) {
	f := &e.full
	if f.first.IsZero() {
		f.burst, f.first = f.sent-f.nays, sentAt
	}
	e.cut.took, e.cut.between, e.cut.since, _ = f.took(f.last, sentAt)
	if e.cut.dry = f.dryFor(sentAt); e.cut.dry == 0 {
		f.dry, f.dryAfter, f.dryFloor = fullMark{sentAt, f.sent, f.nays, f.held, e.cut.n}, e.cut.took, 0
		if f.last.at.IsZero() {
			f.dryAfter = f.burst
		} else if e.cut.between > 0 {
			f.dryFloor = (e.cut.took - max(e.cut.n, f.last.n)) / e.cut.between.Seconds()
		}
	}
	f.last = fullMark{sentAt, f.sent, f.nays, f.held, e.cut.n}
	f.held += hold
}

// afresh returns the estimator as new from now, what the refusals taught
// it forgotten: they were a concurrency cap's (see lane.capChanged). It
// keeps what does not come of them: the longest span seen, and what the
// server took before its first refusal of all, its burst, which bounds
// how long what it takes between refusals measures its rate (see
// fullRate). (Forgotten under a cap that was a mistake, nginx's limit_req
// with no burst seemed to hold 40, and what it took over a climb from 5 a
// second, 7 a second, cut the pace held at 9 a second.)
func (e *estimator) afresh(now time.Time) estimator {
	n := newEstimator(e.ceil, e.adapt, now)
	n.stretch(e.span)
	n.full.burst, n.full.first = e.full.burst, e.full.first
	return n
}

// fullRate returns the rate the server took at from the last refusal
// marked to cut's, the holds between left out (a window may have emptied
// in them), and how far over it the server's rate may lie: a window's
// worth (a span's) over that time, since a window takes a whole one at
// its wall (a bucket, a request's worth only). It says nothing over less
// than four spans, or eight of the requests refused; nor over longer than
// the server's burst (what it took before its first refusal) lasts a pace
// a twentieth under the rate (see cutTo): a bucket emptied under the pace
// since, and what it took is only what was sent.
func (e *estimator) fullRate(cut pending) (rate, slack float64, ok bool) {
	if cut.since < 4*e.span || cut.took < minAnswers*cut.n {
		return 0, 0, false
	}
	rate = cut.took / cut.since.Seconds()
	if (1-cutTo)*rate*cut.since.Seconds() > e.full.burst || rate < e.good && (e.climbedTo(cut) || e.belowHeld(rate)) {
		return 0, 0, false
	}
	return rate, e.span.Seconds() / cut.since.Seconds(), true
}

// belowHeld reports whether rate is under what the pace held for a span
// (good) shows the server lets through: holding it for goodFor, the server
// took good that long, no more than its rate that long and its burst (what
// it took before its first refusal). (nginx's limit_req with no burst, 334/min
// held 2.2 s, its burst 1: 5.1 a second at least, where what it took
// between refusals while the pace climbed to there, 4.6, cut the pace to
// 260/min and the run took 1.51x.)
func (e *estimator) belowHeld(rate float64) bool {
	return e.goodFor > 0 && rate < e.good-e.full.burst/e.goodFor.Seconds()
}

// climbedTo reports whether the lane climbed to cut's refusal from far
// under the rate since the refusal before (see longRun.climbing): the
// server was not full meanwhile, and what it took is what was sent, not
// its rate, where that is under the pace held for a span (good; see
// fullRate). (nginx's limit_req of 10 a second with no burst, its opening
// cut to 135/min and climbing, refused at 680/min 10 s later: what it
// took since, 202/min, cut the pace to 192/min, and it took 40 s to climb
// back, 1.8x the ideal.)
func (e *estimator) climbedTo(cut pending) bool {
	half := min(cut.between, memory) / 2
	mid := cut.at.Add(-half)
	return e.long.climbing(mid.Add(-half), mid, cut.at, 4*cut.n)
}

// keptUp returns the least rate the server lets through that what it
// admitted over the last seconds before cut's refusal shows: over any
// time, a limiter takes no more than it refills then and what it holds,
// its burst (a fixed window, two windows' worth, at its edge). The most
// that says over any time back from four spans to the refusal before (a
// minute at most) bounds a measure from that refusal on from below
// where the pace climbed from far under the rate meanwhile: a measure of
// what was sent, not of what the server takes. (Climbing back after a
// ban of 2 s, a pace held at 1,184/min for 6 s was refused at 1,243/min
// and cut to 607/min, the 30 s of the climb in its measure.)
func (e *estimator) keptUp(cut pending) float64 {
	most := 0.0
	for k := 4 * e.span; k <= min(cut.between, maxSpan); k += e.span {
		most = max(most, (e.long.got.sum(cut.at.Add(-k), cut.at)-2*e.full.burst)/k.Seconds())
	}
	return most
}

// dryRate returns the most the server can let through a second when it
// took nothing of what was sent from a refusal a second or more before
// cut's to it: a bucket full at the first and still at the last leaked
// less than cut's request between. (A window refuses so up to its wall,
// a second at least, the shortest any is taken to be.) Not once the run
// has lasted dryMost: that is more likely a window longer than a
// second's, and the lane holds until it ends (see dryRun). Nor when the
// run began right after the server took a whole burst (see afterBurst),
// nor when so slow a bucket would take longer than maxSpan to refill what
// the server took before its first refusal: none that servers give is,
// and a window spent is likelier (small requests that fit in the flood of
// refusals after a token window's opening moved the marks afterBurst
// weighs: 480,000 tokens a minute cut to 4,314).
func (e *estimator) dryRate(cut pending) (float64, bool) {
	if cut.dry < minSpan || cut.dry >= dryMost || e.full.afterBurst(cut.n) {
		return 0, false
	}
	if r := cut.n / cut.dry.Seconds(); !e.full.outpaced(r) && r*maxSpan.Seconds() >= e.full.burst {
		return r, true
	}
	return 0, false
}

// measuredCut bounds the cut to next by what the server took between its
// refusals (see fullRate, dryRate).
func (e *estimator) measuredCut(cut pending, next, bad float64) (float64, float64) {
	e.measured = false
	if r, slack, ok := e.fullRate(cut); ok && next > r*(1+slack) {
		if kept := e.keptUp(cut); kept > r {
			// More than it took since: what it took was what was sent,
			// its rate lies between kept and the rate refused.
			return min(next, cutTo*kept), bad
		}
		// Its rate, give or take a window's worth, however long a
		// burst that came back under a cut held a probe over it: a
		// pace over that is no pace held.
		e.measured = true
		return cutTo * r, min(bad, r)
	}
	if r, ok := e.dryRate(cut); ok && cutTo*r < next {
		return cutTo * r, min(bad, r) // refused all along: under what one request a while lets through
	}
	return next, bad
}

// dryFor returns how long the server has taken nothing of what was sent,
// from the first of a run of refusals to that of a request sent at
// sentAt; 0 if it took some since. It is also the least hold such a
// refusal sets, up to lockout: a bucket that refused all along so long
// lets through one request in as long at least (see dryRate), and
// probing it sooner is refused; a window of a second has its wall a
// second after its first refusal at most, which the holds doubling from
// a quarter second overshoot by a fraction of it. (Longer runs are a
// longer window's, which dryRun's lockout holds for: doubling on, a
// sliding log of a minute took 2.1x its time, 1.5x without.)
func (f *sinceFull) dryFor(sentAt time.Time) time.Duration {
	if took, d, _, ok := f.took(f.dry, sentAt); ok && took <= 0 {
		return d
	}
	return 0
}

// unpaced returns the server's rate a refusal with no pace shows, if
// any: by its hint (see hinted), or by what the server took since the
// refusal before (see trackedAgain), which is a measure (see up).
func (e *estimator) unpaced(cut pending) (r float64, measured, ok bool) {
	if r, ok = e.hinted(cut); ok {
		return r, false, true
	}
	r, ok = e.trackedAgain(cut)
	return r, ok, ok
}

// trackedAgain returns, for a refusal with no pace whose headers told the
// window (the lane's tracker following what it has left), the server's
// rate as what it took since the refusal before, over the whole time
// between, holds and all: refused there, it was full, and refused here,
// full again, so it let through no more meanwhile than its rate over that
// time (a bucket, a request more; a window, a window's worth over its
// length). The tracker's room came back wrong: a bucket's time to full
// taken for a window of its told limit lets the whole limit go at each
// reset, and the burst back is refused. A GCRA of 24 a minute with a
// burst of 7, told GitHub's way, answered 90 s late (only refusals come
// back in time to tell), was refused at every reset for 90 s so. Not
// over less than twice lockout: resets in whole seconds place the times
// a lane held to them a second off, and a burst of a few sent back after
// a hint of a second says how small it is, not how fast it refills (a
// GCRA of 20 a second with a burst of 5 so measured 7 a second).
func (e *estimator) trackedAgain(cut pending) (float64, bool) {
	if !math.IsInf(cut.rate, 1) || !cut.shown || cut.took < 2*cut.n || cut.between < 2*lockout {
		return 0, false
	}
	return cut.took / cut.between.Seconds(), true
}
