package pace

import "time"

// A wall: a run of refusals with nothing taken that began right after the
// server took a whole burst (see sinceFull, dryRate).

// afterBurst reports whether the run of refusals with nothing taken began
// right after the server took as much as its burst (what it took before
// its first refusal, many requests of n) since it last refused, or since
// the start: a window's wall or a ban after a window's worth, as likely as
// a slow bucket, and a slow bucket refilled as much refills in as long
// again. A bucket's rate so bounded is wrong by the whole burst's, the
// pace cut by all of it: against a 2 s ban of a window of 20 a second,
// 52/min (the pace climbed back over 80 s, the next ban cut it to 32/min),
// and a minute's window of 120 stayed at 27/min after it reopened.
func (f *sinceFull) afterBurst(n float64) bool {
	return f.burst >= minAnswers*n && f.dryAfter >= f.burst
}

// outpaced reports whether a bucket refilling at rate r could not have
// taken what the server took from the refusal marked before the run of
// refusals to the run's first: full at both, it took no more than it
// refilled and the bigger of the two requests refused. So the run is no slow bucket's but a wall's, or
// a ban's after a window's worth, and says nothing of the rate. (A ban of
// 2 s after 20 in a second took 20 in the 2 s between two of its runs;
// taken for a bucket of one request per run, 41/min, the pace came back
// to the 1,200/min over minutes, and the run took 12x its time.)
func (f *sinceFull) outpaced(r float64) bool { return r < f.dryFloor }

// outWalled reports whether a refusal dry into a run of refusals with
// nothing taken is at a wall though the run did not begin after a whole
// burst: no bucket refilling at one request over the run could have taken
// what the server took before it (see outpaced). On the real clock the
// burst, counted at the first refusal of all, came to more than the
// window before a ban's run took, and each refusal of the 2 s ban was cut
// again: 1,200/min to 151/min, 5.9x.
func (f *sinceFull) outWalled(dry time.Duration, n float64) bool {
	return dry > 0 && f.outpaced(n/dry.Seconds())
}

// walled reports whether the run of refusals with nothing taken, as
// marked last, began after a whole burst (see afterBurst): the server is
// at a window's wall or bans, and its refusals until it takes again say no
// more of its rate than the first did; cut after cut in a 2 s ban, the
// pace went from 1,998 to 49/min.
func (f *sinceFull) walled(n float64) bool { return !f.dry.at.IsZero() && f.afterBurst(n) }

// open notes a request sent at sentAt that the server admitted: the first
// admitted since the newest refusal went, the earliest of them if answers
// come out of order, is when a fixed window the server starts at a
// client's request began (see wallHold).
func (f *sinceFull) open(sentAt time.Time) {
	if sentAt.After(f.lastNay) && (!f.opened.After(f.lastNay) || sentAt.Before(f.opened)) {
		f.opened = sentAt
	}
}

// wallEnd returns when to probe a wall seen at now, dry for dry: a span
// on; at the first wall of all, short of lockout, the first whole number
// of spans since the first request admitted (see open) that is after now,
// and a fiftieth of a span over it for the time a request takes to reach
// the server. A fixed window that starts at a client's first request
// (express-rate-limit, rate-limiter-flexible) reopens its length after it,
// mostly a whole number of seconds; probed a span after the probe before,
// the probe came just before the reopening and was held another span (60
// in 3 s probed at 0.75, 1.75 and 2.75 s, next at 6 s: 1.19x ref, now
// 1.07x; 20 a second 1.13x, now 1.07x). Only at the first wall: at later
// ones the windows since had drifted from whole spans and the probes
// pulled sooner met the wall again (a window of 40 in 2 s, 1.05x -> 1.22x).
func (e *estimator) wallEnd(now time.Time, dry time.Duration) time.Time {
	f, next := &e.full, now.Add(e.span)
	if dry >= lockout || f.opened.IsZero() || f.opened.After(f.first) {
		return next
	}
	k := now.Sub(f.opened)/e.span + 1
	if at := f.opened.Add(k*e.span + e.span/50); at.Before(next) {
		return at
	}
	return next
}

// wallHold returns the hold of a refusal seen at now in a run at a wall or
// locked out, cut once in it, of n units: until wallEnd, or sooner where
// the window the lane's answers show has room again (see windowEnd). A
// span is counted as held, as
// an episode's hold is (see markFull), the epoch's too, what it adds to the
// holds before it only (the refusals of requests in flight come in one
// hold): a window's rate measured over time the lane held through is the
// rate times the share it sent in (20 a second so measured 10 a second;
// locked out by a counter of 600 a minute, 2 a second, and the run took
// 2.75x). Short of lockout it is also time at a wall, which a pace's use
// leaves out (see used); a lockout's is not: counted so, the pace a 10 s
// ban left looked used and climbed into the next ban (1.35x -> 1.74x).
func (e *estimator) wallHold(now time.Time, dry time.Duration, n float64) time.Duration {
	f, until := &e.full, e.wallEnd(now, dry)
	until = e.windowEnd(now, until, n)
	if extra := now.Add(e.span).Sub(f.wallUntil); extra > 0 {
		extra = min(extra, e.span)
		f.held, e.ep.held, f.wallUntil = f.held+extra, e.ep.held+extra, now.Add(e.span)
		if dry < lockout {
			e.ep.walled += extra
		}
	}
	// The episode costs the whole run: a step up is worth it once it
	// pays for so long a hold (see worth). Charged only its first
	// hold, a ban of 2 s after a window of 20 a second was probed each
	// 6-10 s, each probe a ban: 1.35x.
	e.cost = max(e.cost, min(now.Add(e.span).Sub(e.costAt), maxSpan))
	return until.Sub(now)
}
