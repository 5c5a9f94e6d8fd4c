package pace

import "time"

// The token pace's own second. A rate.Limiter lets through, in any second,
// a second's worth and its burst (a second's worth too): against a server
// that counts a sliding second, twice its limit, and a prompt of a third
// of it is refused as often as not. So the lane also keeps to its pace
// within every second, by its own send log: a request of n tokens goes
// when the last second's sends and n are within a second of the pace.
// Windows of a second are the shortest servers count; a longer one sees
// at most its length's worth, as every second's is kept to. A request
// bigger than a second of the pace is left to the rate.Limiter, whose debt
// spreads it; so is every request to a server whose headers have shown
// its kind of window (see window.judge and window.stand): a bucket that
// refills as it goes admits what the rate.Limiter lets through, and a
// fixed window all of its size between its walls, which the tracker
// follows. The "second" is a second and the tracker's guard, once the
// server's headers showed a sliding window (see ownSecond), and holds the
// pace's worth of that time.
//
// The request whose room is kept (it has waited its patience) goes as
// soon as the sends it waits for have left the second; until then, others
// take only what it will not need: what will be spare when it goes. Sends
// leave a second after they went, so room can only grow while nothing is
// sent, and a request sent now takes its room from every instant of the
// coming second alike.

// inSecond reports whether n units fit q's pace within the last second,
// besides held (units that go now, before them) and the room kept (for a
// request of kept units); when not, wait is how long until they might.
func (q *quantity) inSecond(now time.Time, n, held, kept float64) (ok bool, wait time.Duration) {
	if !q.secondKeeps(n) {
		return true, 0
	}
	most := max(q.secondsWorth(), n) // a request bigger than it goes into a second empty of others
	if q.secondKeeps(kept) {
		most = max(most, kept) // and the others wait with it for one, when its room is kept
	}
	capped := q.ownMost(now, most) // less while a refusal's second lasts (see refund.go)
	if ok, wait = q.fitsSecond(now, n, held, kept, capped); !ok && capped < most {
		wait = max(min(wait, q.back.until.Sub(now)), time.Millisecond) // when it ends, it may fit
	}
	if ok && q.byPhases(now, q.ownSecond()) {
		if kept > capped {
			kept = 0 // as fitsSecond: the kept request is not held by the second
		}
		ok, wait = q.inPhases(now, q.ownSecond(), n+held+kept, capped) // see phases.go
	}
	return ok, wait
}

// fitsSecond is inSecond with the own second holding most at most.
func (q *quantity) fitsSecond(now time.Time, n, held, kept, most float64) (ok bool, wait time.Duration) {
	span := q.ownSecond()
	if kept > most {
		kept = 0 // the kept request is not held by the second
	}
	// What goes now stays in the second from now on: it is as if sent.
	free := q.roomAt(now, span, most) - held
	if kept > 0 {
		at := q.fitAt(now, span, most, held+kept)
		if spare := q.roomAt(at, span, most) - held - kept; spare < n {
			// Its room is kept until it goes (its going wakes the lane);
			// if it fits already, until both would.
			switch {
			case at.After(now):
				return false, at.Sub(now)
			case held+kept+n <= most:
				return false, max(q.fitAt(now, span, most, held+kept+n).Sub(now), time.Millisecond)
			}
			return false, time.Second
		}
	}
	if n <= free {
		return true, 0
	}
	return false, max(q.fitAt(now, span, most, held+n).Sub(now), time.Millisecond)
}

// keptBySecond reports whether the own second keeps a request of n units
// to the pace: there is one, n is no more than a second of it, and the
// server's headers have not told a bucket, a fixed window or a told window
// of a minute or so (which the tracker follows; see toldWindow).
func (q *quantity) keptBySecond(n float64) bool {
	return q.secondKeeps(n) && n <= float64(q.lim.Limit())
}

// secondKeeps is keptBySecond for requests up to two seconds of the pace:
// one bigger than a second of it goes into a second that holds nothing
// else, and the rate.Limiter's debt spreads what follows (see inSecond).
// Sent beside a second's short prompts, a prompt of 3,978 tokens at a
// pace of 3,883 a second made 6,295 in a second, and a sliding log of
// 40,000 tokens a 10 s, told its limit, refused. Longer ones are left to
// the rate.Limiter alone: the others of their second add less than half
// of them, and held for a second empty of short prompts they took their
// turn at the pace and were sent round (told 12,000 a minute, prompts of
// 10 s of the pace: a sliding counter refused 1.6% in 3 runs of 12).
func (q *quantity) secondKeeps(n float64) bool {
	if _, told := q.toldWindow(); told {
		return false
	}
	return q.lim != nil && q.win.refill == 0 && !q.win.wall && n > 0 && n <= 2*float64(q.lim.Limit())
}

// roomAt is what the span ending at t (now or later) has left of most,
// if nothing more is sent: the own second's, or the told minute's.
func (q *quantity) roomAt(t time.Time, span time.Duration, most float64) float64 {
	return most - q.heldAfter(t.Add(-span))
}

// fitAt is the first instant from now when n units fit the span, if
// nothing more is sent: a span after the send that brought the count to
// where what followed it and n fit.
func (q *quantity) fitAt(now time.Time, span time.Duration, most, n float64) time.Time {
	if q.roomAt(now, span, most) >= n {
		return now
	}
	t, found := q.heldTo(most - n)
	if !found {
		return now.Add(span)
	}
	return t.Add(span)
}

// ownSecond is how long the own second keeps a send: a second, and the
// guard the tracker of the server's window allows for the way to the
// server once readings showed a sliding window (one that keeps no unit
// past its length, see window.sliding), so that against a window of a
// second both give a send's room back at once. Kept for a second alone, a
// long prompt's room came back to the own second a guard before the
// tracker gave it: what the prompts waiting could not take in that gap
// lay idle, and short ones took the rest (told the limit of a sliding
// second with headers, runs were 6% slower than without). A sliding
// counter (its resets reach past the length) weighs the window before,
// and a second's worth and the guard's over 1.02 s, in steps, overran it:
// refusals rose from 1% to 3% told its limit with answers slower than its
// window; there the own second keeps a second.
func (q *quantity) ownSecond() time.Duration {
	if !q.win.sliding() || q.win.counting() {
		return time.Second
	}
	return time.Second + q.win.guard()
}

// secondsWorth is what the own second holds: the pace over its length.
func (q *quantity) secondsWorth() float64 {
	return float64(q.lim.Limit()) * q.ownSecond().Seconds()
}

// The told minute. A told limit L a minute is the server's promise: in
// any minute it admits L, whatever its window. The pace alone does not
// keep to it: a prompt longer than a second of the pace goes as soon as
// the rate.Limiter holds its burst, the rest taken as a debt that later
// sends wait out, so in the opening (the limiter empty, no reading back
// yet) the sends of the first t seconds are the pace's t seconds' worth
// and the debt of the last long prompt: told 12,000 tokens a minute
// (paced at 11,650 by the 3% margin), with answers slower than the
// minute, the first 57 s saw 13.7k, and the server's minute refused one.
// So no minute of the lane's own send log holds more than L less the
// margin, whatever the pace lets through. Less the margin, not L: a
// sliding counter weighs the minute before by how much of it is still in
// its window, and the opening's short prompts, sent before the long ones,
// weighed more there than they were (told L, it refused one at 68 s).
// Once the headers show the told window (see toldWindow), a bucket or a
// fixed window, the tracker follows it (see keptBySecond): a bucket
// starting full, or a window's worth on either side of a wall, pass L in
// a minute as the server allows, and held to the own minute, the sends to
// a fixed minute whose wall was not made out spread as if it slid (one
// run in six at the even pace, 1.10x the time it allows, not 0.91x). The
// request pace takes no debts (one unit at a time, a quarter second ahead
// at most): no minute of it passes the pace's worth and one.

// inMinute reports whether n tokens fit q's told minute (see above)
// besides held and kept (units that go, or are kept to go, before them),
// and when not, how long until they might. A request bigger than L goes
// when the minute holds nothing else.
func (q *quantity) inMinute(now time.Time, n, held, kept float64) (ok bool, wait time.Duration) {
	if _, followed := q.toldWindow(); followed || q.minute <= 0 || n <= 0 || q.win.refill > 0 || q.win.wall {
		return true, 0
	}
	most, need := max(q.minute, n), held+kept+n
	if q.roomAt(now, time.Minute, most) >= need {
		return true, 0
	}
	return false, max(q.fitAt(now, time.Minute, most, need).Sub(now), time.Millisecond)
}
