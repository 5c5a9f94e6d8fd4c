package mock

import "time"

// penaltyBox refuses every request for penalty once inner has refused one,
// as gateways that ban a client for a while after a violation do (fail2ban,
// Cloudflare's rate limiting rules with a block duration). A refusal during
// the ban does not make it longer.
type penaltyBox struct {
	inner   meter
	penalty time.Duration
	until   time.Time // the ban's end; zero or past: no ban
}

func (p *penaltyBox) fits(now time.Time, cost int) (bool, time.Duration) {
	ok, retry := p.inner.fits(now, cost)
	if now.Before(p.until) {
		// Both must be over: the ban, and what the inner meter holds.
		return false, max(retry, p.until.Sub(now))
	}
	return ok, retry
}

func (p *penaltyBox) take(now time.Time, cost int) { p.inner.take(now, cost) }

func (p *penaltyBox) refuse(now time.Time, cost int) {
	p.inner.refuse(now, cost)
	if !now.Before(p.until) {
		p.until = now.Add(p.penalty)
	}
}

func (p *penaltyBox) finish(cost int) { p.inner.finish(cost) }

// state is the inner meter's, with nothing remaining during a ban.
func (p *penaltyBox) state(now time.Time) state {
	st := p.inner.state(now)
	if now.Before(p.until) {
		st.remaining = 0
		st.reset = max(st.reset, p.until.Sub(now))
	}
	return st
}

// concurrencyCap admits at most limit requests in flight; beyond, it
// refuses at once. Its retry is a guess the server can make, the time a
// request takes (its configured latency).
type concurrencyCap struct {
	limit    int
	inFlight int
	guess    time.Duration
}

func (c *concurrencyCap) fits(time.Time, int) (bool, time.Duration) {
	if c.inFlight < c.limit {
		return true, 0
	}
	return false, c.guess
}

func (c *concurrencyCap) take(time.Time, int)   { c.inFlight++ }
func (c *concurrencyCap) refuse(time.Time, int) {}
func (c *concurrencyCap) finish(int)            { c.inFlight-- }

func (c *concurrencyCap) state(time.Time) state {
	return state{limit: c.limit, remaining: max(c.limit-c.inFlight, 0)}
}
