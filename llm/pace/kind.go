package pace

import (
	"math"
	"time"
)

// How the tracker tells what kind of window it follows: a fixed window (a
// wall) and a sliding counter by how their resets stand and move (stand),
// a bucket by resets in step with what is used (judge); anything else is
// followed as a sliding log. Readings that come after those of later
// requests are judged by the order their requests went (see reordered).

// resolution is how finely the window's resets are told: within timing
// noise, or in whole seconds.
func (w *window) resolution() time.Duration {
	if w.fine {
		return 20 * time.Millisecond
	}
	return time.Second
}

// stand tells a fixed window by its reset: it stands still while the
// window counts (told alike, within its resolution, by requests sent
// apart) and, once reached, moves on by a period. A sliding counter's
// stands still too but moves on by its length before it is reached (see
// counter.move); a sliding log's and a bucket's move with every request.
// A window whose resets are told too coarsely for its period (whole
// seconds of a 1 s window) is not taken for a wall: its ends are not known
// well enough. A reset told in whole seconds (rounded up) may put the end
// held up to a second late, so a request sent within that second before
// it has reached it: taken for a move before the end, a fixed minute's
// resets, each moved so by 59.5 s, were taken for a counter's, whose
// model let the 25th of a minute go. Nor is one sent within a guard
// before the end (which the end held has added): it may reach the server
// after it. A fixed second's, sent 1 ms before its end and counted in the
// next window, moved by a second twice and was taken for a counter's;
// that model held the lane under its pace (1.11-1.16x in one run in four).
func (w *window) stand(r Reading, reset, sentAt time.Time) {
	tol := w.resolution()
	switch d := reset.Sub(w.reset); {
	case w.reset.IsZero():
		w.from = sentAt
	case d.Abs() <= tol:
		w.stood = w.stood || sentAt.Sub(w.from) >= tol
	default:
		if d > 0 && !w.inStep(r) && (w.stood || w.unlikeLog(r, d, sentAt.Sub(w.at))) { // a bucket's move is none of these
			early := 2 * w.guard() // the guard the end held has, and the way to the server
			if !w.fine {
				early += tol
			}
			// Its end must be known well within a period to be of use.
			w.wall = !sentAt.Before(w.reset.Add(-early)) && 20*tol <= w.period && w.ctr.length == 0
			if sentAt.Before(w.reset.Add(-early)) {
				w.ctr.move(d, sentAt.Sub(w.from), tol, reset)
				w.halved(r, d)
			}
			if w.ctr.length > 0 {
				w.refill = 0
			}
		}
		w.stood, w.from = false, sentAt
	}
}

// unlikeLog reports whether a reset that moved on by d, from one told
// only by requests sent at one instant (so not seen to stand), moved as no
// sliding log's does: from a reading of room left to one of room left
// whose reset is short of the longest seen, by other than the time between
// their sends (gap), and by half the longest reset at least (a counter's resets
// reach two lengths at most), in a window not known to be a bucket (whose
// reset moves by what each request takes). A log's reset is when its newest unit leaves: a request it
// admits is that unit, its reset the whole length, and it moves by the
// time since the one before. A counter's sends a window holds go at one
// instant, where room comes back (its resets never stand for them), and
// its resets are ends of fixed windows: told 1.46 s and 1.96 s to bursts
// 1.5 s apart, the end moved by its length, 1 s. Not so taken, a counter of
// 1 s answered 1.5 s late was followed as a log of 2 s for whole runs,
// half its rate sent (1.8x).
func (w *window) unlikeLog(r Reading, d, gap time.Duration) bool {
	tol := w.resolution()
	return w.refill == 0 && r.Left > 0 && r.Reset < w.period-tol && 2*d >= w.period-tol && (d-gap).Abs() > tol
}

// halved tells a counter by one move of its reset, d before it was
// reached, once a probe went (see roomOrProbe): a probe tests a counter of
// half the longest reset seen, and such a counter, admitting it, tells a
// reset between that half and the whole, at the end of the window after
// the probe's, half the longest reset on from the end held. A log would not
// have admitted it (its reset would be its whole length), a fixed window's
// end does not move before it is reached, a bucket's moves by what it
// takes. Waiting for a second move left a token counter of a minute,
// filled in its first half second and probed at 66 s, followed as a log
// of 2 minutes until 120 s, nothing sent meanwhile.
func (w *window) halved(r Reading, d time.Duration) {
	// The end held may lack the guard (none before a period was seen).
	tol, half := w.resolution(), w.period/2
	if w.ctr.length == 0 && w.refill == 0 && w.probes > 0 && r.Left > 0 && (d-half).Abs() <= tol+w.guard() && r.Reset > half+tol && r.Reset <= w.period+tol {
		w.ctr.length = d
		if (d - w.guard() - half).Abs() < (d - half).Abs() {
			w.ctr.length = d - w.guard()
		}
	}
}

// beyond tells a sliding counter by a reset beyond the window's told
// length: no other kind keeps a unit longer than its length, but a
// counter's units weigh off over the window after their own, and its reset
// says when all have: by the end of the next window, two lengths at most.
// A reset further on is of something else (a penalty box's ban). Told in
// whole seconds, a reset of the length and a second is past it too (it is
// rounded up, or to the nearest, from more than the length): a counter of
// a second, its resets all "2", was followed as a log, and its stale
// readings, near full and rounded down, held the lane to 18.7 a second.
//
// A length a told rate gives (toldLength) tells alike, but less surely: a
// rate told too high makes the length short of the true one, and a fixed
// window's or a sliding log's resets may then reach past it. So it takes
// a reset past one and a half of it, which stood still for requests sent
// apart (a log's moves with each), as a counter's of that length: a
// counter's reset is at the end of the next window, and its requests sent
// in the first half of a window are told more. Waiting instead for its
// reset to move twice alike left a counter of a second, answering 1.5 s
// late, unknown for 4 to 14 s (the sends of a window, held by it, go at
// one instant, and the reset never stands for them), its long prompts
// refused meanwhile, each counted, holding the window. A length shorter
// than the resets' resolution is not told so: throttled's GCRA, 20 a
// second with a burst of 5, tells a limit of 6 and its time to full in
// whole seconds, 1 s, and was taken for a counter of 6 per 0.3 s, the
// told lane held to 5 of them (1.19x the ideal).
func (w *window) beyond(r Reading) {
	tol := w.resolution()
	if w.ctr.length > 0 {
		return
	}
	switch l := w.toldLength(); {
	case r.Window > 0 && (r.Reset > r.Window+tol || !w.fine && r.Reset == r.Window+tol) && r.Reset <= 2*r.Window+tol:
		w.ctr.length, w.refill = r.Window, 0
	case r.Window == 0 && l >= tol && !w.many && w.stood && 2*r.Reset > 3*l && r.Reset <= 2*l+tol:
		w.ctr.length, w.refill = l, 0
	}
}

// older takes from r, the reading of a request sent before the one held
// (answered sooner: a refusal is answered at once, an admitted request
// after its latency), what it tells of a counter of the told length: its
// reset past one and a half of it (see beyond), at the end held, from a
// request sent apart from the one that told it, stood still. Refusals
// answered ahead of slow answers hid these, and the counter stayed
// unknown for as long as requests were refused.
func (w *window) older(r Reading, sentAt time.Time) {
	tol, l := w.resolution(), w.toldLength()
	if !r.Told || r.Reset <= 0 || w.ctr.length > 0 || r.Window > 0 || w.many || l < tol || w.limit <= 0 || w.reset.IsZero() ||
		2*r.Reset <= 3*l || r.Reset > 2*l+tol || sentAt.Sub(w.from).Abs() < tol {
		return
	}
	// The end held has the guard of its time added, none before a period
	// was seen: up to the guard now.
	if d := sentAt.Add(r.Reset).Sub(w.reset); d > tol || d < -tol-w.guard() {
		return
	}
	w.ctr.length, w.refill = l, 0
	reset := w.reset.Sub(w.at) - w.guard()
	w.ctr.read(&w.log, w.base-w.left, w.at, reset, w.seq, false, w.guard())
}

// behind takes from r, the reading of a request sent before the one held,
// what it tells of the window's kind besides (see older): its reset is one
// the server gives (the longest seen grows by it), and one at the end held
// tells that end stood since its request went. A counter's opening fills
// its first window at once; the last of those sends is refused and
// answered first (at once, the others after their latency), so the end
// held was not seen to stand, its period was short of twice the length by
// the time from the first send to the last, and an admitted probe's move
// by half of it (see halved) was not taken: a token counter of a minute,
// answered 90 s late, stayed unknown till 210-420 s of a 420 s run.
func (w *window) behind(r Reading, sentAt time.Time) {
	if !r.Told || r.Reset <= 0 || w.reset.IsZero() {
		return
	}
	w.period = max(w.period, r.Reset, r.Window)
	tol := w.resolution()
	if d := sentAt.Add(r.Reset).Sub(w.reset); d <= tol && d >= -tol-w.guard() && w.from.Sub(sentAt) >= tol {
		w.stood, w.from = true, sentAt
	}
}

// judge tells a bucket by how the reset moved since the reading held: a
// bucket's reset is the time to refill what is used, so it keeps in step
// with Limit-Left; a window's (a wall's end, or when the newest unit
// leaves) does not. Only readings whose use differs by a fifth can tell,
// and only by more than timing noise (a whole second, for resets given in
// seconds); a window told a sliding counter is none.
func (w *window) judge(r Reading, sentAt time.Time) {
	if w.sizeBucket(r, sentAt) {
		return
	}
	if w.offStep(r) {
		w.refill = 0
	}
	used, usedThen := float64(w.limit-r.Left), float64(w.limit)-w.left
	if w.reset.IsZero() || w.limit <= 0 || w.ctr.length > 0 || used <= 0 || usedThen <= 0 ||
		math.Abs(used-usedThen) < max(2, usedThen/5) {
		return
	}
	then := w.reset.Sub(w.at) - w.guard()
	asBucket := time.Duration(float64(then) * used / usedThen)
	asWall, asLog := then-sentAt.Sub(w.at), then // a wall's end comes nearer; a log's newest unit is this one
	noise := w.resolution()
	if min((asBucket-asWall).Abs(), (asBucket-asLog).Abs()) <= noise {
		return // too near to tell
	}
	if (r.Reset - asBucket).Abs() < min((r.Reset-asWall).Abs(), (r.Reset-asLog).Abs()) {
		w.refill = used / r.Reset.Seconds()
	} else {
		w.refill = 0
	}
}

// sizeBucket tells a bucket whose limit is not its size (a GCRA's told as
// its rate a minute, with room for a burst of a few) by what any bucket
// keeps: what is left and what it regains over the reset (its time to
// full) add up to its size. Two readings, the newer with two or more units
// fewer left and its reset longer by more than their noise, give its rate
// (the units over the reset's growth) and size; a wall's end comes nearer
// and a log's newest unit keeps its reset at the length, so neither moves
// so; a counter's reset grows by a length as a window rolls, which the
// readings must be sent well within. A size under what a reading left, or
// near the limit told (judge's case), is none of this.
// Taken for a log of its time to full, a GCRA of 24 a minute with a burst
// of 7 had the lane wait out each reset and send the burst back at once,
// one refused each time (5-7%), halving the pace twice in some runs.
func (w *window) sizeBucket(r Reading, sentAt time.Time) bool {
	then := w.reset.Sub(w.at) - w.guard()
	fewer, longer := w.left-float64(r.Left), r.Reset-then
	if w.reset.IsZero() || w.ctr.length > 0 || w.wall || fewer < 2 || longer < max(2*w.resolution(), 2*time.Second) || 2*sentAt.Sub(w.at) > longer {
		return false
	}
	rate := fewer / longer.Seconds()
	size := float64(r.Left) + rate*r.Reset.Seconds()
	if size < float64(w.most) || w.limit > 0 && size > 0.75*float64(w.limit) {
		return false
	}
	w.refill, w.limit, w.sized = rate, int(math.Ceil(size-0.5)), true
	return true
}
