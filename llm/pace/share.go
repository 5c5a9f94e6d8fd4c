package pace

import (
	"context"
	"math"
	"time"
)

// A Sharer is the pacing state that the lanes of several processes using
// one API key share (DESIGN §9), such as a *shared.Client over Redis. With
// one, a lane draws each request from the key's budgets at its paces (so
// the processes together keep to them), waits out a pause any of them
// set, and shares the pauses its refusals set; its estimator counts what
// it sent times the live processes, so that a pace it learns is the key's,
// not its share. A Sharer never fails a request: when its store is away,
// it paces this process at its share on its own.
type Sharer interface {
	// Take waits until one request and n tokens of model may go at rps
	// requests and tps tokens a second (+Inf: none) across the processes.
	// It returns only ctx's error.
	Take(ctx context.Context, model string, rps, tps float64, n int) error
	// Settle tells model's token budget that a request which took taken
	// tokens of it used used: the rest is given back, the excess taken.
	Settle(ctx context.Context, model string, taken, used int)
	// Pause holds model's requests in every process for d from now.
	Pause(ctx context.Context, model string, d time.Duration)
	// Paused returns how long model's requests are still held; 0: not.
	Paused(ctx context.Context, model string) time.Duration
	// Live returns how many processes share model's lane (at least 1).
	Live(model string) int
	// Pace returns model's pace for the key, requests and tokens a second
	// (+Inf: none), when another process's estimator sets it: the lane
	// then follows it (follow), its own estimator kept at it, so that the
	// processes go at one pace and one of them learns it. Otherwise the
	// lane's own pace, given to Take, is the key's.
	Pace(model string) (rps, tps float64, follow bool)
	// Hold waits for one of model's slots for a request in flight, when
	// the processes share a cap on those, and returns the func that gives
	// it back. It returns only ctx's error.
	Hold(ctx context.Context, model string) (release func(), err error)
}

// sharedPause returns how long the pause that any process set holds the
// lane still; 0 without a Sharer. A pause longer than the lane's own was
// set by a refusal in another process: see heldElsewhere.
func (ln *lane) sharedPause(ctx context.Context) time.Duration {
	s := ln.l.cfg.Shared
	if s == nil {
		return 0
	}
	d := s.Paused(ctx, ln.model)
	if d > 0 {
		ln.heldElsewhere(d)
	}
	return d
}

// heldElsewhere makes a pause of d from now, which another process's
// refusal set, the lane's own. In the process that leads the lane, whose
// estimator learns the key's pace, the refusal is the key's, and its
// request estimator takes it as it would its own (as one request of the
// key's, where each of its own stands for share): seeing only its own, it would keep a pace over the limit for
// as long as the refusals fell on the others' requests. Otherwise the time
// it holds the lane beyond the lane's own pause is counted as held in the
// estimators' epochs: nothing can be sent then, and a rate measured over
// it would be measured low (the cut after the next refusal would go too
// deep). A pause within the lane's own, and one read again, add nothing.
// ln.mu is not held.
func (ln *lane) heldElsewhere(d time.Duration) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	now := ln.l.now()
	extra := now.Add(d).Sub(later(now, ln.until))
	if extra <= elsewhereSlack {
		return
	}
	ln.pause(d)
	_, _, follows := ln.l.cfg.Shared.Pace(ln.model)
	for _, q := range []*quantity{&ln.req, &ln.tok} {
		switch {
		case q == &ln.req && !follows:
			q.est.refused(now, now, 1, d) // one of the key's, not of its own that stand for share
		case q.est.cut.decideAt.IsZero(): // a cut being decided looks no further than its refusal
			q.est.ep.held += extra
		}
	}
}

// elsewhereSlack is how much a shared pause must outlast the lane's own to
// be another's: the shared pause is read late, and rounded to milliseconds.
const elsewhereSlack = 20 * time.Millisecond

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// takeShared draws the request from the key's budgets at the lane's paces.
func (ln *lane) takeShared(ctx context.Context, n int) error {
	s := ln.l.cfg.Shared
	if s == nil {
		return nil
	}
	ln.mu.Lock()
	if rps, tps, ok := s.Pace(ln.model); ok {
		now := ln.l.now()
		ln.req.adopt(now, rps)
		ln.tok.adopt(now, tps)
		ln.logged("rpm", &ln.req, now, 1)
		ln.logged("tpm", &ln.tok, now, 0)
	}
	rps, tps := ln.req.est.pace(), ln.tok.est.pace()
	ln.mu.Unlock()
	return s.Take(ctx, ln.model, rps, tps, n)
}

// settle tells the key's token budget what p's request used, once its
// outcome o is known: one refused used nothing, and all it took is given
// back; one admitted used what the server counted (o.Used), the rest given
// back or the excess taken; one lost (it may have been counted) or
// admitted with no count keeps what it took.
func (ln *lane) settle(p *Permit, o Outcome) {
	s := ln.l.cfg.Shared
	if s == nil || o.Result == Lost || o.Result == Admitted && o.Used <= 0 {
		return
	}
	used := o.Used
	if o.Result == Refused {
		used = 0
	}
	// No ctx: Done has none. The store's own timeout bounds the call.
	s.Settle(context.Background(), ln.model, int(p.tokens), used)
}

// adopt makes r, the key's pace that another process's estimator sets,
// q's from now (under the told ceiling): a new epoch of q's estimator at
// r, each time, so that it does not climb on its own while it follows;
// the refusals it gets are then mostly of requests sent before, which
// teach it nothing (the leader learns from its own), and one whose cut is
// being decided is left to finish. The one place that reaches into the
// estimator for sharing. ln.mu is held.
func (q *quantity) adopt(now time.Time, r float64) {
	e := &q.est
	if e.adapt && e.cut.decideAt.IsZero() {
		e.shift(now, min(r, e.ceil))
	}
}

// holdShared waits for a slot shared by the processes, if they share a cap
// on requests in flight; the func it returns gives it back.
func (ln *lane) holdShared(ctx context.Context) (func(), error) {
	if s := ln.l.cfg.Shared; s != nil {
		return s.Hold(ctx, ln.model)
	}
	return func() {}, nil
}

// share is how many processes' sending one of this lane's stands for in
// its estimator's count: the live processes with a Sharer, else 1.
func (ln *lane) share() float64 {
	if s := ln.l.cfg.Shared; s != nil {
		return float64(max(s.Live(ln.model), 1))
	}
	return 1
}

// spread tells the other processes of a pause a refusal set in this lane
// (until is the lane's pause after the refusal, before what it was).
func (ln *lane) spread(before, until time.Time) {
	s := ln.l.cfg.Shared
	if s == nil || !until.After(before) {
		return
	}
	if d := until.Sub(ln.l.now()); d > 0 {
		// No ctx: Done has none. The store's own timeout bounds the call.
		s.Pause(context.Background(), ln.model, d)
	}
}

// slotShare is the part of the gate's limit this process takes while the
// lane starts slow: the slow start is the key's (three processes starting
// together would send three times its burst), so each live process takes
// its share of it, one at least. ln.mu is held.
func (ln *lane) slotShare(limit int) int {
	if ln.l.cfg.Shared == nil || limit <= 0 || ln.gate.policy.slow.IsZero() {
		return limit
	}
	return max(1, int(math.Ceil(float64(limit)/ln.share())))
}
