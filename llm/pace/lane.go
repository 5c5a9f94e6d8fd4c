package pace

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// lane is the pacing of one model: two quantities (requests and tokens),
// the gate, and the shared pause, under one mutex. Every wait happens
// outside it.
type lane struct {
	l     *Limiter
	model string

	mu       sync.Mutex
	req, tok quantity
	gate     gate
	until    time.Time                   // the shared pause: nothing is sent before
	keeper   *turn                       // the request that has waited its turn for the token window: its room is kept
	queue    queue                       // the requests waiting for room or on their way to be sent (see queue.go)
	changed  chan struct{}               // closed when an answer or a release may make room
	unsure   struct{ n, tokens float64 } // refusals that did not say which limit, and their tokens (see bigOnes)
	units    unitGuess                   // what its windows of no unit said count (see weigh)
	answers  tally                       // the answers of about the last second, refused or not (see believed)
}

// quantity is one thing a server limits: the pace the estimator decides
// (made a rate.Limiter: nil when none), the server's window as its headers
// tell it, and the lane's own count of what it sent.
type quantity struct {
	est   estimator
	win   window
	lim   *rate.Limiter
	count float64 // units sent so far
	back  refunds // what the server refused of them (see refund.go)
	own   history // units sent, by second, for weighing the server's claims
	shown float64 // the pace last logged
	// filled: a told window's worth has gone into lim, once (see sync).
	filled bool
	minute float64 // tokens: the told limit a minute less the margin, which no minute of sends passes (see inMinute); 0: untold
	// opening: until the lane's first answer, the most the pace may be,
	// a second (see Limiter.opening); 0: no cap.
	opening float64
	heard   bool      // the server has answered a request of the lane (see byPhases)
	turn    time.Time // the last turn at the pace given (see spaced)
}

func newLane(l *Limiter, model string) *lane {
	now := l.now()
	ln := &lane{l: l, model: model, changed: make(chan struct{})}
	ln.req.est = newEstimator(l.ceiling(l.cfg.RPM), l.cfg.Adapt, now)
	ln.tok.est = newEstimator(l.ceiling(l.cfg.TPM), l.cfg.Adapt, now)
	ln.gate.policy = newConcurrency(l.cfg.Concurrency, l.cfg.Adapt && l.cfg.RPM <= 0, now)
	ln.req.win.told = float64(l.cfg.RPM) / 60
	ln.tok.win.told = float64(l.cfg.TPM) / 60
	ln.tok.win.late.off = true // late probes are of requests (see lateProbes)
	ln.tok.minute = perMinute(l.ceiling(l.cfg.TPM))
	ln.req.opening = l.opening(l.cfg.RPM)
	ln.req.sync(now, 1)
	ln.tok.sync(now, 0)
	return ln
}

// acquire waits for the pause, room in the server's windows, a slot and
// the paces, in that order, and sends. (No slot is held while a request
// waits for room: the one whose room is kept must find one free.) A pause
// that begins meanwhile, or room taken by another, sends it round again.
func (ln *lane) acquire(ctx context.Context, n int) (*Permit, error) {
	ln.mu.Lock()
	t := &turn{tokens: float64(n), seq: ln.queue.next, start: ln.l.now()}
	ln.queue.next++
	ln.mu.Unlock()
	paid := false // its turn at the paces is taken
	for {
		err := ln.waitPause(ctx)
		if err == nil {
			err = ln.waitWindows(ctx, t)
		}
		free := func() {} // gives back the slot shared with other processes
		if err == nil {
			free, err = ln.takeSlots(ctx, t)
		}
		if err == nil && !ln.stillPaid(t, paid) {
			if err = ln.takePaces(ctx, t); err == nil {
				err = ln.takeShared(ctx, n)
			}
			if err != nil {
				ln.releaseSlot()
				free()
			}
			paid = err == nil
		}
		if err != nil {
			ln.mu.Lock()
			ln.unkeep(t)
			ln.leave(t)
			ln.mu.Unlock()
			return nil, err
		}
		p, paused := ln.send(t)
		if p != nil {
			p.free = free
			return p, nil
		}
		ln.releaseSlot()
		free()
		// Room taken meanwhile: wait for it again, the turn kept. A pause
		// begun meanwhile: a fresh turn after it, so that those it held
		// leave spread out.
		paid = paid && !paused
	}
}

// unkeep gives back the room kept for t. ln.mu is held.
func (ln *lane) unkeep(t *turn) {
	if ln.keeper == t {
		ln.keeper = nil
		ln.wake()
	}
}

func (ln *lane) waitPause(ctx context.Context) error {
	for {
		ln.mu.Lock()
		d := ln.until.Sub(ln.l.now())
		ln.mu.Unlock()
		d = max(d, ln.sharedPause(ctx))
		if d <= 0 {
			return ctx.Err()
		}
		if err := sleep(ctx, d, nil); err != nil {
			return err
		}
	}
}

// pause holds the lane until d from now. ln.mu is held.
func (ln *lane) pause(d time.Duration) {
	if until := ln.l.now().Add(d); d > 0 && until.After(ln.until) {
		ln.until = until
	}
}

// takeSlots takes a slot of the lane's gate, then one shared with the
// other processes (if they share a cap), and returns the func that gives
// the shared one back.
func (ln *lane) takeSlots(ctx context.Context, t *turn) (func(), error) {
	if err := ln.takeSlot(ctx, t); err != nil {
		return func() {}, err
	}
	free, err := ln.holdShared(ctx)
	if err != nil {
		ln.releaseSlot()
		return func() {}, err
	}
	return free, nil
}

// wake wakes every wait that an answer or a release may end. ln.mu is held.
func (ln *lane) wake() {
	close(ln.changed)
	ln.changed = make(chan struct{})
}

// waitWindows waits, for this request only, until it fits what the
// server's windows have left. Other requests may pass one that does not
// fit yet, but only for its patience (see patience); then the room it
// needs is kept for it until it is sent, one such request at a time, in
// turn. Which of those that fit goes first, and the room held for those on
// their way, queue.go tells.
func (ln *lane) waitWindows(ctx context.Context, t *turn) error {
	ln.mu.Lock()
	ln.join(t)
	ln.pass(t, false)
	t.waiting = true
	ln.mu.Unlock()
	defer func() {
		ln.mu.Lock()
		t.waiting = false
		ln.mu.Unlock()
	}()
	for {
		ln.mu.Lock()
		now := ln.l.now()
		ok, d := ln.fits(now, t)
		if ok {
			ln.pass(t, true)
		} else {
			ln.keepIfDue(now, t, d)
		}
		wake := ln.changed
		ln.mu.Unlock()
		if ok {
			return nil
		}
		if err := sleep(ctx, d, wake); err != nil {
			return err
		}
	}
}

// fits reports whether t fits both of the server's windows and the token
// pace's own second (see inSecond) now, besides the room kept for others,
// and if not, how long until it may. ln.mu is held.
func (ln *lane) fits(now time.Time, t *turn) (bool, time.Duration) {
	kept := 0.0
	if ln.keeper != nil && ln.keeper != t && !ln.keeper.passing {
		kept = ln.keeper.tokens
	}
	ln.look(now)                         // for late probes, of requests only (see taken.go)
	ln.req.win.trip = ln.req.est.nayTrip // see roll.go (of requests only)
	okR, dR, probeR := ln.req.win.roomOrProbe(now, ln.req.count, 1, 0)
	okT, dT, probeT := true, time.Duration(0), false
	okS, dS := true, time.Duration(0)
	if t.tokens > 0 {
		held, ahead := ln.held(now, t, kept)
		okT, dT, probeT = ln.tok.win.roomOrProbe(now, ln.tok.count, t.tokens, kept+held)
		okS, dS = ln.tok.inSecond(now, t.tokens, held, kept)
		// Held by the second's own sends alone: the pace was reached.
		ln.tok.est.ep.pressed = ln.tok.est.ep.pressed || !okS && okT && okR && kept == 0 && held == 0
		if ok, d := ln.tok.inMinute(now, t.tokens, held, kept); !ok {
			okS, dS = false, max(dS, d)
		}
		if held > 0 && !(okT && okS) {
			ln.stepAside(ahead)
		}
	}
	t.probe = nil
	switch {
	case probeR && probeT:
		// One probe at a time: it waits until one of the resets held
		// has passed (roomOrProbe said no wait of its own).
		okR, okT = false, false
		dR = max(min(ln.req.win.reset.Sub(now), ln.tok.win.reset.Sub(now)), time.Millisecond)
	case probeR:
		t.probe = &ln.req.win
	case probeT:
		t.probe = &ln.tok.win
	}
	return okR && okT && okS, max(dR, dT, dS)
}

// send lets t go, counted, unless a pause began (paused), or its room
// went or the gate closed on its slot (see overGate) while it waited for
// the paces.
func (ln *lane) send(t *turn) (p *Permit, paused bool) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	now := ln.l.now()
	if ln.until.After(now) {
		ln.pass(t, false)
		return nil, true
	}
	ln.pass(t, true) // its turn at the paces is taken: it steps aside for none
	if ok, _ := ln.fits(now, t); !ok || ln.overGate(now) {
		ln.pass(t, false)
		return nil, false
	}
	ln.unkeep(t)
	ln.leave(t)
	if t.probe != nil {
		t.probe.probeSent(now)
	}
	if l := ln.tok.lim; l != nil && t.owed > 0 {
		l.ReserveN(now, min(t.owed, l.Burst()))
	}
	t.owed = 0
	share := ln.share()
	ln.req.sent(now, 1, share)
	ln.tok.sent(now, t.tokens, share)
	return &Permit{lane: ln, tokens: t.tokens, sent: now, seq: ln.gate.policy.sent(now), share: share,
		seqReq: ln.req.count, seqTok: ln.tok.count, probe: t.probe}, false
}

// tick lets the policies judge what time has shown. ln.mu is held.
func (ln *lane) tick(now time.Time) {
	if e := &ln.req.est; e.deciding(now) && math.IsInf(e.cut.rate, 1) {
		e.single = ln.gate.policy.log.singles() // the first cut of all, with no pace (see bracket)
	}
	ln.req.est.tick(now)
	ln.tok.est.tick(now)
	if was := ln.gate.policy.cap; ln.gate.policy.tick(now, ln.req.est.span) {
		ln.l.log.Debug("pace", "model", ln.model, "limit", "in flight", "from", was, "to", ln.gate.policy.cap)
	}
	ln.logged("rpm", &ln.req, now, 1)
	ln.logged("tpm", &ln.tok, now, 0)
}

// sent counts n units sent at now, standing for share times as many in
// the estimator's count (see [Sharer]).
func (q *quantity) sent(now time.Time, n, share float64) {
	q.count += n
	q.win.sent(now, q.count)
	q.est.sent(n * share)
	q.own.add(now, n)
}
