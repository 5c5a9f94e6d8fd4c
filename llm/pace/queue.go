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
	owed    int       // tokens its turn at the token pace takes when it is sent (see takePaces)
	paces   uint64    // the lane's gate.paces when it took its turn at the paces
}

// before reports whether u goes before t when both fit alone but not
// together: the bigger first, then the first come.
func (u *turn) before(t *turn) bool {
	return u.tokens > t.tokens || u.tokens == t.tokens && u.seq < t.seq
}

// queue holds the lane's requests between asking for room and being sent.
type queue struct {
	set     map[*turn]struct{}
	order   []*turn // the turns of set, the one that goes first (see before) first
	passing float64 // the tokens of the turns of set that are passing
	next    int64   // the seq of the next turn
	aside   bool    // one waits for others to go first: a change of who passes wakes it
	nudged  bool    // the waiters were woken for a bigger one that fits, since that last change
}

// maxAhead is how many of the turns that go before a waiter it looks at,
// biggest first, for room to leave them: with many workers, every wake
// would otherwise cost each waiter a look at every bigger one, the square
// of the waiters under the lane's mutex (a thousand waiters, a fifth of a
// second a wake). Twice a run's usual few dozen workers: below that, all.
const maxAhead = 64

// join makes t one of the lane's waiters (again: nothing changes). ln.mu
// is held.
func (ln *lane) join(t *turn) {
	q := &ln.queue
	if _, in := q.set[t]; in {
		return
	}
	if q.set == nil {
		q.set = map[*turn]struct{}{}
	}
	q.set[t] = struct{}{}
	i, _ := slices.BinarySearchFunc(q.order, t, order)
	q.order = slices.Insert(q.order, i, t)
	if t.passing {
		q.passing += t.tokens
	}
}

// order compares turns as they go: the bigger first, then the first come.
func order(a, b *turn) int {
	switch {
	case a == b:
		return 0
	case a.before(b):
		return -1
	}
	return 1
}

// leave takes t out of the waiters, sent or given up, and wakes those
// that stepped aside: for t, it may be, as a waiter that fitted (a
// cancelled one never passes, and they would sleep till their timers,
// a window's span on a told window). ln.mu is held.
func (ln *lane) leave(t *turn) {
	q := &ln.queue
	if _, in := q.set[t]; in {
		delete(q.set, t)
		if i, found := slices.BinarySearchFunc(q.order, t, order); found {
			q.order = slices.Delete(q.order, i, i+1)
		}
		if t.passing {
			q.passing -= t.tokens
		}
	}
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
	if _, in := ln.queue.set[t]; in {
		if passing {
			ln.queue.passing += t.tokens
		} else {
			ln.queue.passing -= t.tokens
		}
	}
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
// and what is held already (of the maxAhead turns first in order). ahead
// reports whether any such waiter was counted. ln.mu is held.
func (ln *lane) held(now time.Time, t *turn, kept float64) (held float64, ahead bool) {
	if ln.tok.lim == nil && ln.tok.win.reset.IsZero() {
		return 0, false // no token limit known: no room to share out
	}
	q := &ln.queue
	held = q.passing
	if _, in := q.set[t]; in && t.passing {
		held -= t.tokens
	}
	if t == ln.keeper || t.passing {
		return held, false
	}
	for i, u := range q.order {
		if i == maxAhead || u == t || !u.before(t) {
			break
		}
		if u.waiting && !u.passing && u != ln.keeper && ln.fitsBeside(now, u.tokens, held, kept) {
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
// patience will be over by the time it looks again, d from now, or at once
// for a long prompt alone in its second (see alone). ln.mu is held.
func (ln *lane) keepIfDue(now time.Time, t *turn, d time.Duration) {
	due := now.Sub(t.start)+d >= patience*min(max(time.Second, ln.tok.win.period), longestTurn)
	if ln.keeper == nil && (due || ln.alone(t)) {
		ln.keeper = t
	}
}

// alone reports whether t is a long prompt that fills the pace's own
// second so that no other of its size fits beside it: over half of it, no
// more than it, and twice the lane's mean request or more. Its room is
// kept at once (see keepIfDue): each such prompt takes a second of its
// own, and one passed by short ones for its patience is a second lost at
// the run's end, where no short ones are left to fill the rest of its
// second (told 40,000 tokens a 10 s, prompts of 2,000-4,400 tokens at a
// pace of 3,883 a second: the short ones done by 34 s, the last 48 s sent
// one long prompt each; 1.14-1.22x -> 1.12-1.14x). Not
// short ones a low pace makes as big (at 194 a second, a prompt of 100
// kept at once held the others back: 0.93x -> 1.01x). ln.mu is held.
func (ln *lane) alone(t *turn) bool {
	q := &ln.tok
	return q.keptBySecond(t.tokens) && t.tokens > q.secondsWorth()/2 && ln.req.count > 0 && t.tokens*ln.req.count >= 2*q.count
}
