package pace

import (
	"cmp"
	"time"
)

// A counter follows a sliding counter (Cloudflare's, HAProxy's stick
// tables, the "sliding window" of Kong and of Redis libraries): the server
// counts a fixed window's units and those of the window before, weighed by
// the share of it still within a window's length back from now. A unit so
// counted weighs off over the window after its own, not all at once.
//
// A counter is told by its reset (see window.stand): while it counts
// anything it says when the count will be 0, the end of the next window,
// so the reset stands still through a fixed window and moves on by the
// length before it is reached; moved alike twice, it is taken for a
// counter (told its length, or a rate that gives it, sooner: see beyond;
// from sends at one instant, see unlikeLog; by an admitted probe, see
// halved; by readings that came late, in the order their requests went,
// see reordered).
// From then on the tracker counts as the server does: the lane's
// own units by the fixed windows' ends (a reset is one), and what the
// server counted besides (other clients', refusals it counts) as sent in
// the window of the reading, weighed off with it.
type counter struct {
	length time.Duration // the fixed windows' length; 0: not known to be a counter
	moved  time.Duration // the last move of a reset before it was reached, if it could be a counter's
	to     time.Time     // where that move went
	edge   time.Time     // an end of a fixed window, as the lane's sends see it
	excess float64       // what the newest reading counted besides the lane's units
	at     time.Time     // when that reading's request went
	slack  time.Duration // how much earlier than the true one edge may be
	tick   time.Duration // the unit the resets are told in (see tickOf); 0: none read yet
	origin time.Time     // the first end told finely, from which later ones refine the length
	votes  edgeVotes     // whether ends told in whole seconds are exact (see vote)
	// carried: told by a reading after an end that counted the window
	// before (see window.carries): its resets are its current window's end.
	carried bool
}

// move notes that a reset that stood still for stood moved on by d, to
// to, before it was reached; tol is the resets' resolution. A counter's
// stands a whole fixed window, or most of one, and its resets are all ends
// of windows: the move before went to an end a whole number of lengths
// from this one. (A bucket's stands while it refills with nothing taken,
// and moves by what the next request takes, so a bucket of requests of
// one size moves alike; it stands a while, not a window, and its resets
// fall anywhere.) A move to where the last went is that move, told again
// by another request's reading (see reordered), not a second one: a
// sliding log's end moved on from a refused probe's by 51 s, twice so by
// two requests sent at one instant, and the log was taken for a counter
// of 51 s (0.80x -> 1.08x).
func (c *counter) move(d, stood, tol time.Duration, to time.Time) {
	if c.length > 0 || c.moved > 0 && to.Sub(c.to).Abs() <= tol {
		return // known (told, or moved alike before): later moves are no finer
	}
	if d < 10*tol || stood < d/2 {
		c.moved = 0
		return
	}
	if c.moved > 0 && (d-c.moved).Abs() <= tol {
		off := to.Sub(c.to) % d
		if min(off, d-off) <= tol {
			c.length = d
		}
	}
	c.moved, c.to = d, to
}

// blurred reports whether the counter's resets are told too coarsely to
// place its fixed windows' ends: in units of a tenth of its length or
// more (whole seconds of a second's counter).
func (c *counter) blurred() bool { return 10*c.tick > c.length }

// start is when the fixed window that t is in began.
func (c *counter) start(t time.Time) time.Time {
	k := t.Sub(c.edge) / c.length
	if t.Before(c.edge.Add(k * c.length)) {
		k--
	}
	return c.edge.Add(k * c.length)
}

// own is the server's count at t of the lane's units, count of them sent
// by then: those of the fixed window t is in, and those of the window
// before weighed by its share still within a length back from t. Within
// a tick after the window's start (taken up to a tick early: see read;
// up to the slack, once the ends are found placed exactly: see vote), the
// server's window may not have ended yet, and the one before that still
// weighs what is left of it, (the tick less the time since the start)
// over the length: counted
// whole only as the window before, 32 sent at a minute counter's opening
// still weighed 0.13 at 119.75 s, and the 24th of its next minute, sent
// after an end taken 0.25 s early, was refused.
func (c *counter) own(log *sendLog, t time.Time, count float64) float64 {
	return c.ownWith(log, t, count, c.slack)
}

// ownWith is own with the ends taken up to slack early.
func (c *counter) ownWith(log *sendLog, t time.Time, count float64, slack time.Duration) float64 {
	s := c.start(t)
	before, earlier := log.countAt(s.Add(-1)), log.countAt(s.Add(-c.length-1))
	n := count - before + (before-earlier)*(1-c.into(t, s, slack))
	if late := s.Add(min(c.tick, slack)).Sub(t); late > 0 {
		n += (earlier - log.countAt(s.Add(-2*c.length-1))) * late.Seconds() / c.length.Seconds()
	}
	return n
}

// into is the share of the fixed window begun at s that has gone by t,
// as late as the end told may be (slack): the window before weighs no
// less than the server's.
func (c *counter) into(t, s time.Time, slack time.Duration) float64 {
	return max(t.Sub(s)-slack, 0).Seconds() / c.length.Seconds()
}

// read takes in a reading that counted used, of the request sent at
// sentAt when the lane's count was seq, whose reset came reset after;
// told: the length was told, not found.
//
// A reset is rounded to the unit it is told in (tick), up or to the
// nearest, so the end it tells may be up to a tick late, and one told late
// puts the units sent at the true end (where sends gather: each waits for
// it) in the window before, weighed off as it goes by, while the server
// counts them whole: the end is taken a tick earlier. In whole seconds the
// latest end so taken on the same grid is kept (each is before the true
// end), and the window before weighs off a second later (see into); a
// finer reset may be early or late by the way to the server (guard).
func (c *counter) read(log *sendLog, used float64, sentAt time.Time, reset time.Duration, seq float64, told bool, guard time.Duration) {
	edge := sentAt.Add(reset - c.tick)
	c.slack = c.votes.slack(guard, c.tick)
	switch {
	case c.tick >= time.Second:
		if !c.edge.IsZero() {
			k := (edge.Sub(c.edge) + c.length/2) / c.length
			if e := edge.Add(-k * c.length); (e.Sub(c.edge)).Abs() <= time.Second {
				edge = e
				if e.Before(c.edge) {
					edge = c.edge
				}
			}
		}
	case !told:
		c.refine(edge)
	}
	c.placed(edge, guard)
	c.vote(log, used, sentAt, seq, guard)
	c.excess = max(used-c.own(log, sentAt, seq), 0)
	c.at = sentAt
}

// note takes in the unit a reset is told in, and reports whether the
// resets are told finer than whole seconds: the tick is the finest unit
// any has been told in, whole seconds, or tenths, hundredths or
// thousandths of one, or a nanosecond if finer.
func (c *counter) note(reset time.Duration) (fine bool) {
	u := time.Nanosecond
	for t := time.Second; t >= time.Millisecond; t /= 10 {
		if reset%t == 0 {
			u = t
			break
		}
	}
	c.tick = min(cmp.Or(c.tick, u), u)
	return c.tick < time.Second
}

// besides is what the newest reading counted besides the lane's units,
// as it weighs at t.
func (c *counter) besides(t time.Time) float64 {
	s, then := c.start(t), c.start(c.at)
	switch {
	case s.Equal(then):
		return c.excess
	case s.Equal(then.Add(c.length)):
		return c.excess * (1 - c.into(t, s, c.slack))
	}
	return 0
}

// avail is what the server has left at now, of limit, for the lane: all
// of it, while the server counts no one else's; else the lane's share of
// it, by what each holds, so that clients sharing the window do not all
// take the room that comes back at the same instant (and, a counter
// counting refusals, lock each other out).
func (c *counter) avail(log *sendLog, now time.Time, count float64, limit int) float64 {
	own, others := c.own(log, now, count), c.besides(now)
	left := float64(limit) - own - others
	if others < max(1, float64(limit)/100) || left <= 0 {
		return left // no one else's, but for the server rounding up
	}
	return left * (own + 1) / (own + 1 + others)
}

// wait is how long until need more units are left, if nothing more is
// sent: the window before weighs off over this one; past its end, what
// this one counted starts to.
func (c *counter) wait(log *sendLog, now time.Time, need float64) time.Duration {
	s := c.start(now)
	end := s.Add(c.length)
	weighing := log.countAt(s.Add(-1)) - log.countAt(s.Add(-c.length-1))
	if c.start(c.at).Equal(s.Add(-c.length)) {
		weighing += c.excess
	}
	if perSec := weighing / c.length.Seconds(); perSec > 0 {
		d := time.Duration(need/perSec*float64(time.Second)) + max(s.Add(c.slack).Sub(now), 0)
		if now.Add(d).Before(end) {
			return max(d, time.Millisecond)
		}
	}
	return end.Sub(now) + time.Millisecond
}
