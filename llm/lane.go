package llm

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
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
	decreaseMin  = 0.5  // of the current limit: never lower it more in one step
	increaseStep = 0.01 // per success, in requests/s (tokens/s: this share of the request's tokens)
	minMeasure   = 200 * time.Millisecond
	minCount     = 5        // successes that make a measure trusted without bounds
	minRate      = 1.0 / 60 // one request a minute
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
	gen        int       // bumped by each decrease
	epoch      time.Time // start of the current measure: the end of the last pause
	okReqs     float64   // successes since epoch
	okTokens   float64   // their tokens
	rateBound  time.Time // last time a waiter had to wait for the request or token rate

	inflight int
	conc     float64       // allowed in flight; 0: no limit
	concMax  float64       // the configured concurrency
	wake     chan struct{} // closed when a slot frees
}

func newLane(l *Limiter, model string) *lane {
	ln := &lane{l: l, model: model, epoch: l.now(), rpmCeil: math.Inf(1), tpmCeil: math.Inf(1), wake: make(chan struct{})}
	keep := 1 - l.cfg.Margin
	if l.cfg.RPM > 0 {
		ln.rpmCeil = float64(l.cfg.RPM) / 60 * keep
		ln.rpm = rate.NewLimiter(rate.Limit(ln.rpmCeil), 1)
	}
	if l.cfg.TPM > 0 {
		ln.tpmCeil = float64(l.cfg.TPM) / 60 * keep
		ln.tpm = rate.NewLimiter(rate.Limit(ln.tpmCeil), tokenBurst(ln.tpmCeil))
	}
	if l.cfg.Concurrency > 0 {
		ln.conc, ln.concMax = float64(l.cfg.Concurrency), float64(l.cfg.Concurrency)
	}
	return ln
}

// tokenBurst is a second's worth of tokens: requests bigger than that take
// the budget in several reservations (see take).
func tokenBurst(perSecond float64) int { return max(1, int(perSecond)) }

// acquire waits for the gate, a concurrency slot, a request and the tokens.
// A pause that begins meanwhile sends the waiter back to the gate, and it
// then takes a fresh share, so requests held by a pause leave it spread out.
func (ln *lane) acquire(ctx context.Context, tokens int) (*permit, error) {
	closed := ln.l.closed
	for {
		if err := ln.waitGate(ctx, closed); err != nil {
			return nil, err
		}
		slot, err := ln.takeSlot(ctx, closed)
		if err != nil {
			return nil, err
		}
		p := &permit{ln: ln, tokens: tokens, slot: slot}
		rpm, tpm := ln.limiters()
		if err := ln.take(ctx, rpm, 1, closed); err != nil {
			p.release()
			return nil, err
		}
		if err := ln.take(ctx, tpm, tokens, closed); err != nil {
			p.release()
			return nil, err
		}
		if ln.pausedFor() <= 0 {
			ln.mu.Lock()
			p.gen = ln.gen
			ln.mu.Unlock()
			return p, nil
		}
		p.release()
	}
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

// take waits for n units of lim. A request bigger than the burst waits only
// for the first burst's worth and leaves the rest as a debt that later
// requests wait out: a big request goes at once, and the rate holds over
// time, as servers counting tokens per window see it.
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
	}
	if ln.tpm != nil {
		raise(ln.tpm, increaseStep*float64(p.tokens), ln.tpmCeil, true)
	}
}

func raise(lim *rate.Limiter, step, ceil float64, tokens bool) {
	r := min(float64(lim.Limit())+step, ceil)
	lim.SetLimit(rate.Limit(r))
	if tokens {
		lim.SetBurst(tokenBurst(r))
	}
}

// rateLimited pauses the lane for the 429's hint (or a second) and, with
// Adapt, lowers the limit it was about, once per round of requests: 429s
// of requests sent before the last decrease say nothing new.
func (ln *lane) rateLimited(p *permit, ae *APIError) {
	d := ae.RetryAfter
	if d <= 0 {
		d = time.Second
	}
	ln.pause(d)
	if !ln.l.cfg.Adapt {
		return
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if p.gen != ln.gen {
		return
	}
	now := ln.l.now()
	span := now.Add(d).Sub(ln.epoch)
	what, was, is := "rpm", 0.0, 0.0
	if ae.tokenLimit {
		what = "tpm"
		ln.tpm, was, is = lower(ln.tpm, ln.okTokens, span, true)
	} else {
		ln.rpm, was, is = lower(ln.rpm, ln.okReqs, span, false)
	}
	if ln.conc > 0 {
		ln.conc = max(1, math.Min(ln.conc, float64(ln.inflight+1))*0.75)
	}
	ln.gen++
	ln.epoch, ln.okReqs, ln.okTokens = now.Add(d), 0, 0
	ln.l.log.Info("limit lowered after a 429", "model", ln.model, "limit", what,
		"from", perMinute(was), "to", perMinute(is), "pause", d.Round(time.Millisecond))
}

// lower sets the rate to a little under what got through (ok units over
// span), and at least decreaseMax below the current rate; on a weak measure
// it lowers at most to decreaseMin of the current rate. It returns
// the limiter (created when there was none) and the rates before and after.
func lower(lim *rate.Limiter, ok float64, span time.Duration, tokens bool) (*rate.Limiter, float64, float64) {
	cur := math.Inf(1)
	if lim != nil {
		cur = float64(lim.Limit())
	}
	next := cur * decreaseMax
	switch {
	case span >= minMeasure && ok >= minCount:
		// What got through is a sound measure of the server's limit.
		next = min(next, decreaseTo*ok/span.Seconds())
	case span >= minMeasure && ok > 0:
		next = max(min(next, decreaseTo*ok/span.Seconds()), cur*decreaseMin)
	case !math.IsInf(cur, 1):
		next = max(next, cur*decreaseMin)
	}
	if math.IsInf(next, 1) {
		return lim, cur, cur // nothing measured yet: the pause alone must do
	}
	next = max(next, minRate)
	burst := 1
	if tokens {
		burst = tokenBurst(next)
	}
	if lim == nil {
		return rate.NewLimiter(rate.Limit(next), burst), cur, next
	}
	lim.SetLimit(rate.Limit(next))
	lim.SetBurst(burst)
	return lim, cur, next
}

// remaining slows the lane before the server's window is spent: when the
// headers say no request, or fewer tokens than this request's, are left, it
// pauses until the window resets instead of collecting a 429.
func (ln *lane) remaining(h http.Header, tokens int) {
	if r, ok := headerInt(h, "x-ratelimit-remaining-requests"); ok && r <= 0 {
		if d, ok := parseReset(h.Get("x-ratelimit-reset-requests"), ln.l.now()); ok {
			ln.pause(d)
		}
	}
	if r, ok := headerInt(h, "x-ratelimit-remaining-tokens"); ok && r < max(tokens, 1) {
		if d, ok := parseReset(h.Get("x-ratelimit-reset-tokens"), ln.l.now()); ok {
			ln.pause(d)
		}
	}
}

func headerInt(h http.Header, key string) (int, bool) {
	v := strings.TrimSpace(h.Get(key))
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func (ln *lane) effective() (rpm, tpm float64) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.rpm != nil {
		rpm = float64(ln.rpm.Limit()) * 60
	}
	if ln.tpm != nil {
		tpm = float64(ln.tpm.Limit()) * 60
	}
	return rpm, tpm
}

func perMinute(perSecond float64) string {
	if math.IsInf(perSecond, 1) || perSecond == 0 {
		return "none"
	}
	return strconv.FormatFloat(perSecond*60, 'f', 0, 64) + "/min"
}
