package llm

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Adaptation constants. A 429 sets the limit a little under what actually
// got through since the last one; each success then adds 1% of the flow
// per second, so the limit is probed again after a few seconds, at the cost
// of about one 429 per probe.
const (
	decreaseTo   = 0.95 // of the measured throughput, after a 429
	decreaseMax  = 0.9  // of the current limit: a 429 always lowers it this much at least
	decreaseMin  = 0.5  // of the current limit: never lower it more in one step on a weak measure
	increaseStep = 0.01 // per success, in requests/s (tokens/s: this share of the request's tokens)
	minMeasure   = 200 * time.Millisecond
	minCount     = 5 // successes that make a measure trusted without bounds
	minRate      = 1.0 / 60
)

// lane is the pacing of one model.
type lane struct {
	l     *Limiter
	model string

	mu         sync.Mutex
	rpm, tpm   *rate.Limiter // nil: no limit known
	rpmCeil    float64       // per second; +Inf when none was configured
	tpmCeil    float64
	pauseUntil time.Time
	rateBound  time.Time // last time a waiter had to wait for the request or token rate

	// The server's windows, as its x-ratelimit-remaining/reset-* headers
	// last told them, less what was sent since. A request that does not fit
	// waits for the reset on its own; smaller ones that fit go ahead of it.
	reqWin, tokWin window
	winWake        chan struct{}        // closed when an answer changes a window
	flying         map[*permit]struct{} // sent and not yet answered

	// Learning (Adapt). A 429 schedules a decrease for when its pause ends,
	// by which time the requests sent before it have been answered, so what
	// got through can be measured.
	gen       int       // bumped by each 429 that schedules a decrease
	epoch     time.Time // start of the current measure
	okReqs    float64   // successes since epoch
	okTokens  float64   // their tokens
	maxTokens int       // the biggest request seen: a token rate never goes under it a minute

	rpmLogged, tpmLogged float64   // the rates last logged, per second
	decideAt             time.Time // zero: no decrease pending
	decideTok            bool      // the pending decrease is of the token limit

	inflight int
	conc     float64       // allowed in flight; 0: no limit
	concMax  float64       // the configured concurrency
	wake     chan struct{} // closed when a slot frees
}

func newLane(l *Limiter, model string) *lane {
	now := l.now()
	ln := &lane{l: l, model: model, epoch: now, rpmCeil: math.Inf(1), tpmCeil: math.Inf(1), wake: make(chan struct{}),
		winWake: make(chan struct{}), flying: map[*permit]struct{}{}}
	keep := 1 - l.cfg.Margin
	if l.cfg.RPM > 0 {
		ln.rpmCeil = float64(l.cfg.RPM) / 60 * keep
		ln.rpm = rate.NewLimiter(rate.Limit(ln.rpmCeil), 1)
	}
	if l.cfg.TPM > 0 {
		ln.tpmCeil = float64(l.cfg.TPM) / 60 * keep
		ln.tpm = newTokenLimiter(ln.tpmCeil, now)
	}
	if l.cfg.Concurrency > 0 {
		ln.conc, ln.concMax = float64(l.cfg.Concurrency), float64(l.cfg.Concurrency)
	}
	return ln
}

// newTokenLimiter returns a token bucket holding a second's worth at most
// and starting empty: a full bucket would add a second's worth to the first
// window the server counts.
func newTokenLimiter(perSecond float64, now time.Time) *rate.Limiter {
	lim := rate.NewLimiter(rate.Limit(perSecond), tokenBurst(perSecond))
	lim.ReserveN(now, lim.Burst())
	return lim
}

// tokenBurst is a second's worth: small against any window a server
// counts tokens in, yet larger than most single requests.
func tokenBurst(perSecond float64) int { return max(1, int(perSecond)) }

// acquire waits for the gate, a concurrency slot, room in the server's
// windows, a request and the tokens. A pause that begins meanwhile sends the
// waiter back to the gate, and it then takes a fresh share, so requests held
// by a pause leave it spread out. The same goes for requests held for a
// window's reset: they take their rates after it.
func (ln *lane) acquire(ctx context.Context, tokens int) (*permit, error) {
	closed := ln.l.closed
	n := max(tokens, 0)
	for {
		if err := ln.waitGate(ctx, closed); err != nil {
			return nil, err
		}
		ln.decide()
		slot, err := ln.takeSlot(ctx, closed)
		if err != nil {
			return nil, err
		}
		p := &permit{ln: ln, tokens: tokens, slot: slot}
		big, err := ln.waitWindows(ctx, n, closed)
		if err != nil {
			p.release()
			return nil, err
		}
		if err := ln.takeRates(ctx, n, closed); err != nil {
			ln.mu.Lock()
			ln.giveBack(n)
			ln.mu.Unlock()
			p.release()
			return nil, err
		}
		if ln.send(p, n, big) {
			return p, nil
		}
		p.release()
	}
}

// takeRates waits for the request and token rates.
func (ln *lane) takeRates(ctx context.Context, tokens int, closed <-chan struct{}) error {
	rpm, tpm := ln.limiters()
	if err := ln.take(ctx, rpm, 1, closed); err != nil {
		return err
	}
	if tokens <= 0 {
		return nil
	}
	return ln.takeTokens(ctx, tpm, tokens, closed)
}

func (ln *lane) limiters() (rpm, tpm *rate.Limiter) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.rpm, ln.tpm
}

func (ln *lane) waitGate(ctx context.Context, closed <-chan struct{}) error {
	for {
		d := ln.pausedFor()
		if err := sleep(ctx, d, closed); err != nil || d <= 0 {
			return err
		}
	}
}

func (ln *lane) pausedFor() time.Duration {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.pauseUntil.Sub(ln.l.now())
}

func (ln *lane) pause(d time.Duration) {
	if d <= 0 {
		return
	}
	until := ln.l.now().Add(d)
	ln.mu.Lock()
	if until.After(ln.pauseUntil) {
		ln.pauseUntil = until
	}
	ln.mu.Unlock()
}

// take waits for n units of lim, in turn. A request bigger than the burst
// waits only for the first burst's worth and leaves the rest as a debt that
// later requests wait out: the rate holds over time, as servers counting
// per window see it.
func (ln *lane) take(ctx context.Context, lim *rate.Limiter, n int, closed <-chan struct{}) error {
	if lim == nil || n <= 0 {
		return nil
	}
	now := ln.l.now()
	first := lim.ReserveN(now, min(n, lim.Burst()))
	rs := []*rate.Reservation{first}
	for left := n - lim.Burst(); left > 0; left -= lim.Burst() {
		rs = append(rs, lim.ReserveN(now, min(left, lim.Burst())))
	}
	delay := first.DelayFrom(now)
	if delay > 0 {
		ln.mu.Lock()
		ln.rateBound = now
		ln.mu.Unlock()
	}
	if err := sleep(ctx, delay, closed); err != nil {
		for i := len(rs) - 1; i >= 0; i-- {
			rs[i].CancelAt(ln.l.now())
		}
		return err
	}
	return nil
}

// takeTokens takes n tokens without holding up smaller requests: it waits,
// outside the queue, until the bucket holds them (or a full bucket, for a
// request bigger than that), and only queues once it has waited as long as
// the tokens take to earn, so a big request is not starved by small ones.
func (ln *lane) takeTokens(ctx context.Context, lim *rate.Limiter, n int, closed <-chan struct{}) error {
	if lim == nil {
		return nil
	}
	start := ln.l.now()
	patience := time.Duration(float64(n) / float64(lim.Limit()) * float64(time.Second))
	for {
		now := ln.l.now()
		k := min(n, lim.Burst())
		have := lim.TokensAt(now)
		waited := now.Sub(start)
		if have >= float64(k) || waited >= patience {
			return ln.take(ctx, lim, n, closed)
		}
		ln.mu.Lock()
		ln.rateBound = now
		ln.mu.Unlock()
		d := time.Duration((float64(k) - have) / float64(lim.Limit()) * float64(time.Second))
		if err := sleep(ctx, min(max(d, time.Millisecond), patience-waited), closed); err != nil {
			return err
		}
	}
}

// takeSlot waits until fewer than conc requests are in flight and reports
// whether it took a slot (none is needed without a concurrency limit).
func (ln *lane) takeSlot(ctx context.Context, closed <-chan struct{}) (bool, error) {
	for {
		ln.mu.Lock()
		if ln.conc <= 0 {
			ln.mu.Unlock()
			return false, nil
		}
		if float64(ln.inflight) < math.Floor(ln.conc) {
			ln.inflight++
			ln.mu.Unlock()
			return true, nil
		}
		wake := ln.wake
		ln.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-closed:
			return false, ErrStopped
		}
	}
}

func (ln *lane) releaseSlot() {
	ln.mu.Lock()
	ln.inflight--
	close(ln.wake)
	ln.wake = make(chan struct{})
	ln.mu.Unlock()
}

// succeeded counts a success for the next measure and, when the lane has
// been held back by its rates lately, raises them a little.
func (ln *lane) succeeded(p *permit) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	ln.okReqs++
	ln.okTokens += float64(p.tokens)
	ln.maxTokens = max(ln.maxTokens, p.tokens)
	if !ln.l.cfg.Adapt {
		return
	}
	if ln.conc > 0 && ln.conc < ln.concMax {
		ln.conc = min(ln.concMax, ln.conc+1/ln.conc)
	}
	if ln.l.now().Sub(ln.rateBound) > 2*time.Second {
		return // not held back by the rates: raising them would test nothing
	}
	if ln.rpm != nil {
		raise(ln.rpm, increaseStep, ln.rpmCeil, false)
		ln.logRaise("rpm", ln.rpm, &ln.rpmLogged)
	}
	if ln.tpm != nil {
		raise(ln.tpm, increaseStep*float64(p.tokens), ln.tpmCeil, true)
		ln.logRaise("tpm", ln.tpm, &ln.tpmLogged)
	}
}

// logRaise logs a limit that has risen by a tenth since it was last
// logged: the steps themselves are too small to be worth a line each.
func (ln *lane) logRaise(what string, lim *rate.Limiter, logged *float64) {
	r := float64(lim.Limit())
	if *logged == 0 || r < *logged {
		*logged = r // set, or lowered, since: count from here
		return
	}
	if r >= *logged*1.1 {
		ln.l.log.Info("limit raised while requests succeed", "model", ln.model, "limit", what, "to", perMinute(r))
		*logged = r
	}
}

func raise(lim *rate.Limiter, step, ceil float64, tokens bool) {
	r := min(float64(lim.Limit())+step, ceil)
	lim.SetLimit(rate.Limit(r))
	if tokens {
		lim.SetBurst(tokenBurst(r))
	}
}
