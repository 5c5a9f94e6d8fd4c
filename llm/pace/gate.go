package pace

import (
	"context"
	"time"
)

// gate is the concurrency gate: the policy, and the requests in flight.
type gate struct {
	policy   concurrency
	inFlight int
	before   *estimator // the request estimator as the cap found set it aside; nil: none (see capChanged)
	paces    uint64     // how often it was brought back: a turn at the paces taken before is taken again
}

// takeSlot takes a slot of the gate for t; waiting for one, t stops
// holding its room in the windows (see queue.go).
func (ln *lane) takeSlot(ctx context.Context, t *turn) error {
	for {
		ln.mu.Lock()
		now := ln.l.now()
		ln.tick(now)
		if limit := ln.slotLimit(now); limit <= 0 || ln.gate.inFlight < limit {
			ln.gate.inFlight++
			ln.mu.Unlock()
			return nil
		}
		ln.gate.policy.blocked = true
		ln.pass(t, false)
		wake := ln.changed
		// The slow start opens with time as well as with answers, and a
		// probe's slot after a spell.
		d := slowStep
		if shut := ln.gate.policy.shut(now); shut > 0 {
			d = min(d, shut)
		}
		ln.mu.Unlock()
		if err := sleep(ctx, d, wake); err != nil {
			return err
		}
	}
}

// stillPaid reports whether t's turn at the paces, if it took one, still
// stands: not once the request estimator was brought back since (see
// capChanged). (Turned back at a cap found while there was no pace, and
// their turns not taken again, fifteen went at once when the cap was
// dropped, and ten were refused.)
func (ln *lane) stillPaid(t *turn, paid bool) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	paid = paid && t.paces == ln.gate.paces
	t.paces = ln.gate.paces
	return paid
}

// slotLimit returns how many of the lane's requests may hold a slot at
// now; 0: no limit. ln.mu is held.
func (ln *lane) slotLimit(now time.Time) int {
	return ln.slotShare(ln.gate.policy.limit(now))
}

// overGate reports whether the slots taken are more than the gate allows
// now: a cap found or lowered after they were taken. A request that took
// its slot before and waited since (for the paces, say) must not go then:
// found while the pause its refusals set held thirty at the paces, a cap
// of 1 let all thirty go at once when it lifted the pause, and the server
// refused 29 (5.7% of the run). It gives its slot back and waits for one
// under the cap. ln.mu is held.
func (ln *lane) overGate(now time.Time) bool {
	limit := ln.slotLimit(now)
	return limit > 0 && ln.gate.inFlight > limit
}

func (ln *lane) releaseSlot() {
	ln.mu.Lock()
	ln.gate.inFlight--
	ln.wake()
	ln.mu.Unlock()
}

// answered tells the gate's policy what became of p, and reports whether
// that showed a concurrency cap: then what the refusals before taught the
// request pace is forgotten, and the pause they set lifted, since they
// were the cap's. ln.mu is held.
func (ln *lane) answered(p *Permit, now time.Time, st flightState) bool {
	was := ln.gate.policy.cap
	ln.tok.heard = ln.tok.heard || st != lostIt // see byPhases
	found := ln.gate.policy.answered(now, p.seq, st)
	ln.capChanged(now, was, found)
	return found
}

// capChanged logs a change of the cap from was; one found just now
// lifts the pause the cap's refusals set (the gate holds the others now)
// and makes the request pace forget what they taught it, its estimator
// set aside. A cap dropped as a mistake (see judge) brings that estimator
// back, at the pace it had: the refusals were a rate limit's after all.
// (Started afresh with no pace instead, a lane that had held 496/min at
// nginx's 10 a second with no burst sent all 16 of -j at once, and 15 were
// refused.) ln.mu is held.
func (ln *lane) capChanged(now time.Time, was int, found bool) {
	if found {
		ln.until = now
		before := ln.req.est
		ln.gate.before = &before
		ln.req.est = ln.req.est.afresh(now)
		ln.logged("rpm", &ln.req, now, 1)
	}
	is := ln.gate.policy.cap
	if is == was {
		return
	}
	ln.l.log.Debug("pace", "model", ln.model, "limit", "in flight", "from", was, "to", is)
	switch {
	case found:
		ln.l.log.Info("concurrency cap found", "model", ln.model, "in flight", is)
	case is == 0 && ln.gate.before != nil:
		e := ln.gate.before
		e.capDropped(now)
		ln.req.est, ln.gate.before = *e, nil
		ln.gate.paces++ // those turned back by the cap, their turn at no pace taken, pay this one
		ln.logged("rpm", &ln.req, now, 1)
	}
}

// capped records the refusal of p and reports whether it is a concurrency
// cap's: about requests, not explained by a request window the server
// says is spent (such a refusal, like one about tokens, is no evidence
// either way), and with as many in the server's hands as the cap.
// ln.mu is held.
func (ln *lane) capped(p *Permit, now time.Time, o Outcome) bool {
	if o.Tokens || o.Requests.Told && o.Requests.Left <= 0 && o.Requests.Reset > 0 {
		if !o.Tokens {
			ln.gate.policy.slow = time.Time{} // a refusal about requests ends the slow start all the same
		}
		ln.answered(p, now, lostIt)
		return false
	}
	was := ln.gate.policy.cap
	claimed := ln.gate.policy.claim(now, p.seq)
	ln.capChanged(now, was, false)
	return ln.answered(p, now, refusedIt) || claimed
}
