package pace

import (
	"slices"
	"time"
)

// The lane's waiters, and which of them goes first when room comes back.
//
// Each request waiting for room in the server's windows polls on its own
// timer, so left alone the one that fits first goes first: the smallest.
// Room that a long prompt leaves behind as it leaves a window is then
// taken by whichever fits, and what is left of it, too little for any
// other, lies idle until the next leaves: against a token window that
// counts long prompts, a tenth of it. So room that comes back goes to the
// biggest waiter it fits, then the next biggest that fits what is left,
// and so on (best fit, biggest first): a request goes only if it fits
// besides every bigger one that fits, and besides the requests that have
// fitted and are on their way to be sent (passing: through the gate and
// the paces), whose room is held for them until they are, unless they
// must wait there (a slot, a turn at a pace, a debt: others may use the
// room meanwhile, and none steps aside for them). One that steps aside
// for a bigger one wakes the others, so that the bigger one looks again
// at once; and a request that starts or ends passing wakes those that
// stepped aside, so that they look again with it counted.
//
// This orders only requests that compete for a token window's room (a
// request window's is the same for all): with no token limit known, the
// lane sends as before. Which one is kept in turn, long passed by
// others, patience bounds.

// turn is one request's way through acquire.
type turn struct {
	tokens  float64
	seq     int64     // its place among the lane's turns, first come first: ties of size go by it
	start   time.Time // when it began to wait
	probe   *window   // the window it goes to probe, past what it held (see roomOrProbe); nil: none
	waiting bool      // it waits for room in the windows (in waitWindows)
	passing bool      // it fitted and is on its way to be sent: its room is held for it
}

// before reports whether u goes before t when both fit alone but not
// together: the bigger first, then the first come.
func (u *turn) before(t *turn) bool {
	return u.tokens > t.tokens || u.tokens == t.tokens && u.seq < t.seq
}

// queue holds the lane's requests between asking for room and being sent.
type queue struct {
	set    map[*turn]struct{}
	next   int64 // the seq of the next turn
	aside  bool  // one waits for others to go first: a change of who passes wakes it
	nudged bool  // the waiters were woken for a bigger one that fits, since that last change
}

// join makes t one of the lane's waiters. ln.mu is held.
func (ln *lane) join(t *turn) {
	if ln.queue.set == nil {
		ln.queue.set = map[*turn]struct{}{}
	}
	ln.queue.set[t] = struct{}{}
}

// leave takes t out of the waiters, sent or given up, and wakes those
// that stepped aside: for t, it may be, as a waiter that fitted (a
// cancelled one never passes, and they would sleep till their timers,
// a window's span on a told window). ln.mu is held.
func (ln *lane) leave(t *turn) {
	delete(ln.queue.set, t)
	t.passing = true // pass sees a change, whatever t was doing, and wakes
	ln.pass(t, false)
}

// pass marks whether t is on its way to be sent, and wakes those that
// stepped aside, so that they look again. ln.mu is held.
func (ln *lane) pass(t *turn, passing bool) {
	if t.passing == passing {
		return
	}
	t.passing = passing
	if ln.queue.aside {
		ln.wake()
	}
	ln.queue.aside, ln.queue.nudged = false, false
}

// stepAside notes that a waiter waits for others to go first, and, if
// some of them are waiters that fit now (ahead), wakes every waiter once,
// so that those look again now. ln.mu is held.
func (ln *lane) stepAside(ahead bool) {
	if ahead && !ln.queue.nudged {
		ln.queue.nudged = true
		ln.wake()
	}
	ln.queue.aside = true
}

// held is the room of the token windows that goes to others before t now:
// that of the turns passing, and of every waiter that goes before t (see
// before) and fits, biggest first, besides those, the room kept (kept)
// and what is held already. ahead reports whether any such waiter was
// counted. ln.mu is held.
func (ln *lane) held(now time.Time, t *turn, kept float64) (held float64, ahead bool) {
	if ln.tok.lim == nil && ln.tok.win.reset.IsZero() {
		return 0, false // no token limit known: no room to share out
	}
	var first []*turn
	for u := range ln.queue.set {
		switch {
		case u == t:
		case u.passing:
			held += u.tokens
		case u.waiting && u != ln.keeper && t != ln.keeper && !t.passing && u.before(t):
			first = append(first, u)
		}
	}
	slices.SortFunc(first, func(a, b *turn) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	for _, u := range first {
		if ln.fitsBeside(now, u.tokens, held, kept) {
			held += u.tokens
			ahead = true
		}
	}
	return held, ahead
}

// fitsBeside reports whether a request of n tokens fits both windows and
// the token pace's own second now, besides held and the room kept. Unlike
// fits it probes nothing and records nothing. ln.mu is held.
func (ln *lane) fitsBeside(now time.Time, n, held, kept float64) bool {
	if ok, _ := ln.req.win.room(now, ln.req.count, 1, 0); !ok {
		return false
	}
	if ok, _ := ln.tok.win.room(now, ln.tok.count, n, kept+held); !ok {
		return false
	}
	if ok, _ := ln.tok.inMinute(now, n, held, kept); !ok {
		return false
	}
	ok, _ := ln.tok.inSecond(now, n, held, kept)
	return ok
}

// patience is how many of the token window's periods (a second at least)
// a request may be passed by others before the room it needs is kept for
// it. Room a window gives back comes in turns: sends that went together
// leave together, a window later, and the lane's sends fall into step with
// them; a request that misses one turn because bigger ones filled it, or
// it came just after, has waited a window already, and the long prompts
// among the requests a run's workers hold (a few dozen, a few going each
// window) wait several windows in turn anyway. Kept after one window,
// nearly every long prompt had its room kept in turn, first come first,
// and the room bigger ones would have filled lay idle behind it. Told the
// limit of a sliding second (means of 4-8 runs): 1.10-1.15x the ideal at
// one window, 1.08-1.11x at four, 1.07-1.09x at eight. Eight bound how
// long any request is passed, and leave the biggest-first order to fill
// the turns meanwhile; windows longer than longestTurn count as that
// long, so that a long prompt waits two minutes at most, not eight, on
// the minute's windows that providers mostly count tokens in.
const (
	patience    = 8
	longestTurn = 15 * time.Second
)

// keepIfDue keeps the room t needs, if no other's is kept, when its
// patience will be over by the time it looks again, d from now. ln.mu is
// held.
func (ln *lane) keepIfDue(now time.Time, t *turn, d time.Duration) {
	if ln.keeper == nil && now.Sub(t.start)+d >= patience*min(max(time.Second, ln.tok.win.period), longestTurn) {
		ln.keeper = t
	}
}
