package llm

import (
	"context"
	"net/http"
	"time"
)

// window is what a server said is left of one of its windows (of requests
// or of tokens), kept up to date with what the client sends.
type window struct {
	left    int
	reset   time.Time // zero: unknown
	pending int       // promised to requests that passed waitWindows and wait for a rate
	logged  bool      // a long wait for this reset was logged

	// What is known of the windows to come: the server's limit per window
	// (its x-ratelimit-limit-* header; a guess from what it let through
	// would be either too low or too high), and the longest reset it gave,
	// which a window lasts at least.
	limit  int
	period time.Duration
	// The window began at the last one's reset, at began, and no answer
	// has told of it yet: left counts down from limit, and reset is a guess.
	guessed bool
	began   time.Time
	low     int // the lowest figure left that the server gave in this window
	// Requests bigger than the whole window that are waiting: the next
	// untouched window is kept for them, or small ones would always take
	// it first.
	big int
}

// guard is allowed for the way to the server: it counts a reset from when
// a request reached it, a little after the client sent it, so a request
// sent at the reset the client worked out could arrive before the server's.
func (w *window) guard() time.Duration { return min(50*time.Millisecond, w.period/50) }

// renew starts the window that follows a reset, when the server's limit is
// known: it holds limit, less what is sent in it, until an answer tells
// more. Without it, every request held for the reset would go at once.
func (w *window) renew(now time.Time) {
	if w.limit <= 0 || w.reset.IsZero() || now.Before(w.reset) {
		return
	}
	// Windows follow one another: the one now began a whole number of
	// periods after the last reset known.
	k := now.Sub(w.reset) / max(w.period, time.Millisecond)
	w.began = w.reset.Add(k * w.period)
	next := w.began.Add(w.period)
	if !next.After(now) {
		next = now.Add(w.period)
	}
	w.left, w.reset, w.logged, w.guessed = w.limit, next, false, true
}

// room reports whether n more fit in w now, besides others promised to
// other requests; when not, wait is until the reset. big tells a request
// that was counted in w.big.
func (w *window) room(now time.Time, n, others int, big bool) (ok bool, wait time.Duration) {
	w.renew(now)
	if w.reset.IsZero() || !now.Before(w.reset) {
		return true, 0 // nothing known of this window
	}
	untouched := w.guessed && w.left == w.limit
	switch {
	case (big || w.oversized(n)) && untouched && others == 0:
		return true, 0 // into an untouched window, as servers admit it
	case !big && untouched && w.big > 0:
		// Kept for a request bigger than the window.
	case n <= w.left-others:
		return true, 0
	}
	return false, w.reset.Sub(now)
}

// oversized reports whether n is more than a whole window holds.
func (w *window) oversized(n int) bool { return w.limit > 0 && n > w.limit }

// count counts n sent in w.
func (w *window) count(now time.Time, n int) {
	if !w.reset.IsZero() && now.Before(w.reset) {
		w.left = max(w.left-n, 0)
	}
}

// waitWindows waits, for this request only, until it fits in what the
// server's windows have left besides what is promised to others, and
// promises it that room. An answer that changes a window wakes the wait.
// It reports whether the request waited as bigger than a whole window.
func (ln *lane) waitWindows(ctx context.Context, n int, closed <-chan struct{}) (big bool, err error) {
	counted := false // in tokWin.big
	defer func() {
		if counted {
			ln.mu.Lock()
			ln.tokWin.big--
			ln.mu.Unlock()
		}
	}()
	for {
		ln.mu.Lock()
		now := ln.l.now()
		okReq, d := ln.reqWin.room(now, 1, ln.reqWin.pending, false)
		okTok, dTok := true, time.Duration(0)
		if n > 0 {
			okTok, dTok = ln.tokWin.room(now, n, ln.tokWin.pending, counted)
		}
		if okReq && okTok {
			ln.reqWin.pending++
			ln.tokWin.pending += n
			ln.mu.Unlock()
			return counted, nil
		}
		d = max(d, dTok)
		if !counted && !okTok && ln.tokWin.oversized(n) {
			counted = true
			ln.tokWin.big++
		}
		if d > time.Minute && !ln.reqWin.logged && !ln.tokWin.logged {
			// A daily quota, say: the run waits rather than collect 429s.
			ln.reqWin.logged, ln.tokWin.logged = true, true
			ln.l.log.Warn("the server's rate-limit window is spent; waiting for its reset",
				"model", ln.model, "reset_in", d.Round(time.Second))
		}
		wake := ln.winWake
		ln.mu.Unlock()
		if err := sleepOrWake(ctx, d, wake, closed); err != nil {
			return false, err
		}
	}
}

// unpromise gives back the room waitWindows promised. ln.mu is held.
func (ln *lane) unpromise(n int) {
	ln.reqWin.pending--
	ln.tokWin.pending -= n
}

// giveBack gives back a promise that will not be used, and wakes the
// waiters it held back. ln.mu is held.
func (ln *lane) giveBack(n int) {
	ln.unpromise(n)
	ln.wakeWindows()
}

// wakeWindows wakes the requests waiting in waitWindows. ln.mu is held.
func (ln *lane) wakeWindows() {
	close(ln.winWake)
	ln.winWake = make(chan struct{})
}

// send lets p go, counted in the windows, unless a pause began or the
// windows changed while it waited for its rates. big is what waitWindows
// reported.
func (ln *lane) send(p *permit, n int, big bool) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	now := ln.l.now()
	ln.unpromise(n)
	okReq, _ := ln.reqWin.room(now, 1, 0, false)
	okTok, _ := ln.tokWin.room(now, n, 0, big)
	if ln.pauseUntil.After(now) || !okReq || (n > 0 && !okTok) {
		ln.wakeWindows() // the room it was promised is free again
		return false
	}
	ln.reqWin.count(now, 1)
	ln.tokWin.count(now, n)
	p.gen, p.sent, p.flying = ln.gen, now, true
	ln.flying[p] = struct{}{}
	return true
}

// landed takes p off the requests in flight.
func (ln *lane) landed(p *permit) {
	ln.mu.Lock()
	delete(ln.flying, p)
	ln.mu.Unlock()
}

// remaining reads the server's x-ratelimit-remaining-* and -reset-*
// headers, of the response to p, into the windows.
func (ln *lane) remaining(h http.Header, p *permit) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	changed := ln.observe(&ln.reqWin, h, "requests", p, func(*permit) int { return 1 })
	if ln.observe(&ln.tokWin, h, "tokens", p, func(q *permit) int { return max(q.tokens, 0) }) {
		changed = true
	}
	if changed {
		ln.wakeWindows()
	}
}

// observe updates w from the headers about what, of the response to p,
// where units tells what a request counts in w. It reports whether w
// changed. ln.mu is held.
//
// Within a window the figures left fall as the server admits requests, so
// the lowest seen is from the last request admitted among those answered,
// and counts every one of them. What was sent in the window and is still in
// flight may come after it: that figure less those is what is surely left.
// A relative reset was counted from when the server took the request, some
// time between sent and now: counting from sent errs on the early side (the
// guard is for that), and a window that has ended by now is old news.
func (ln *lane) observe(w *window, h http.Header, what string, p *permit, units func(*permit) int) bool {
	left, known := headerInt(h, "x-ratelimit-remaining-"+what)
	if !known {
		return false
	}
	d, known := parseReset(h.Get("x-ratelimit-reset-"+what), p.sent)
	if !known {
		return false
	}
	if limit, told := headerInt(h, "x-ratelimit-limit-"+what); told && limit > 0 {
		w.limit = limit
	}
	w.period = max(w.period, d)
	now, reset := ln.l.now(), p.sent.Add(d+w.guard())
	if !reset.After(now) {
		return false
	}
	if w.guessed && p.sent.Before(w.began) {
		return false // a late answer from the window before the guessed one
	}
	// A reset later than ours by more than timing noise is a new window,
	// as is the first word on one begun on a guess.
	if !w.guessed && !w.reset.IsZero() && now.Before(w.reset) && reset.Sub(w.reset) < 100*time.Millisecond {
		w.low = min(w.low, left)
	} else {
		w.low, w.reset, w.guessed, w.logged = left, reset, false, false
	}
	// Requests sent before the window began were counted in the one before.
	start := w.reset.Add(-w.period - w.guard())
	fly := 0
	for q := range ln.flying {
		if !q.sent.Before(start) {
			fly += units(q)
		}
	}
	w.left = max(w.low-fly, 0)
	return true
}
