package mock

import (
	"net/http"
	"strconv"
	"time"
)

// refusal says why admit turned a request away.
type refusal int

const (
	admitted      refusal = iota
	quotaSpent            // Quota successful answers were given
	requestsLimit         // the request meter refused it
	tokensLimit           // the token meter refused it
	busy                  // InFlight requests are in flight
	falseClaim            // picked at random by FalseClaims
)

// verdict is the outcome of admit for one request.
type verdict struct {
	refusal refusal
	fault   int           // 0, or the 5xx status to answer with after the delay
	delay   time.Duration // Latency plus this request's jitter
	quota   bool          // whether a quota grant was taken (give it back if unused)

	req, tok       state         // what the request and token meters say after the decision
	hasReq, hasTok bool          // whether those limits are set
	retry          time.Duration // for a refusal: until the request could be admitted
}

// faults are the statuses FailRate picks from, uniformly.
var faults = [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}

// limits are the meters of a Handler, each nil when not configured.
type limits struct {
	inFlight meter // the concurrency cap
	reqs     meter // RPM
	toks     meter // TPM
}

// newLimits builds the meters cfg asks for; cfg has its defaults.
func newLimits(cfg Config, start time.Time) limits {
	var l limits
	if cfg.InFlight > 0 {
		l.inFlight = &concurrencyCap{limit: cfg.InFlight, guess: max(cfg.Latency, time.Millisecond)}
	}
	if cfg.Limiter == LimiterConcurrency {
		return l
	}
	mc := func(limit int) meterConfig {
		return meterConfig{limit: limit, window: cfg.Window, start: start, first: cfg.FirstWindows,
			burst: int(cfg.Burst * float64(limit)), penalty: cfg.Penalty}
	}
	if cfg.RPM > 0 {
		l.reqs = newMeter(cfg.Limiter, mc(cfg.RPM))
	}
	if cfg.TPM > 0 {
		l.toks = newMeter(cfg.Limiter, mc(cfg.TPM))
	}
	return l
}

// admit decides whether a request costing tokens is served now: the quota,
// then a false claim (FalseClaims), then every meter. Each meter hears of
// the outcome, so those that count refused requests can.
func (h *Handler) admit(tokens int) verdict {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()

	var v verdict
	switch {
	case h.cfg.Quota > 0 && h.granted >= h.cfg.Quota:
		v.refusal = quotaSpent
	case h.cfg.FalseClaims > 0 && h.rng.Float64() < h.cfg.FalseClaims:
		v.refusal, v.retry = falseClaim, time.Second
	default:
		v.refusal, v.retry = h.lim.decide(now, tokens)
	}
	if h.lim.reqs != nil {
		v.req, v.hasReq = h.lim.reqs.state(now), true
	}
	if h.lim.toks != nil {
		v.tok, v.hasTok = h.lim.toks.state(now), true
	}
	if v.refusal != admitted {
		return v
	}

	v.delay = h.cfg.Latency
	if h.cfg.Jitter > 0 {
		v.delay += time.Duration(h.rng.Int64N(int64(h.cfg.Jitter) + 1))
	}
	if h.cfg.FailRate > 0 && h.rng.Float64() < h.cfg.FailRate {
		v.fault = faults[h.rng.IntN(len(faults))]
	} else if h.cfg.Quota > 0 {
		h.granted++
		v.quota = true
	}
	return v
}

// decide asks every meter; the request is admitted when all of them fit it.
// The first refusal in the order cap, requests, tokens names the reason, and
// the retry is the longest wait of the meters that do not fit it once the
// refusal is counted (by those that count refusals, or start a ban).
func (l *limits) decide(now time.Time, tokens int) (refusal, time.Duration) {
	checks := l.checks(tokens)
	why := admitted
	for _, c := range checks {
		if c.m == nil {
			continue
		}
		if ok, _ := c.m.fits(now, c.cost); !ok && why == admitted {
			why = c.why
		}
	}
	for _, c := range checks {
		switch {
		case c.m == nil:
		case why == admitted:
			c.m.take(now, c.cost)
		default:
			c.m.refuse(now, c.cost)
		}
	}
	if why == admitted {
		return admitted, 0
	}
	return why, l.wait(now, tokens)
}

// check is one meter of limits and what a request costs it.
type check struct {
	m    meter
	cost int
	why  refusal
}

func (l *limits) checks(tokens int) [3]check {
	return [...]check{{l.inFlight, 1, busy}, {l.reqs, 1, requestsLimit}, {l.toks, tokens, tokensLimit}}
}

// wait is how long from now until every meter fits a request of tokens, 0
// when they all do now. It changes no meter.
func (l *limits) wait(now time.Time, tokens int) time.Duration {
	var d time.Duration
	for _, c := range l.checks(tokens) {
		if c.m == nil {
			continue
		}
		if ok, retry := c.m.fits(now, c.cost); !ok {
			d = max(d, retry, time.Nanosecond)
		}
	}
	return d
}

// done tells the meters that an admitted request has been answered, and
// gives back the quota grant of one that was admitted but not answered
// (its client went away).
func (h *Handler) done(v verdict, answered bool) {
	if v.refusal != admitted || (h.lim.inFlight == nil && (answered || !v.quota)) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lim.inFlight != nil {
		h.lim.inFlight.finish(1)
	}
	if !answered && v.quota {
		h.granted--
	}
}

// setRetryHeaders sets the hints of a 429: Retry-After in whole seconds,
// rounded up and at least 1, and with ms retry-after-ms, both until the
// request could be admitted.
func setRetryHeaders(hdr http.Header, d time.Duration, withMs bool) {
	hdr["Retry-After"] = []string{strconv.FormatInt(max(ceilDiv(d, time.Second), 1), 10)}
	if withMs {
		hdr["Retry-After-Ms"] = []string{strconv.FormatInt(max(ceilDiv(d, time.Millisecond), 1), 10)}
	}
}

// formatReset writes d the way OpenAI's x-ratelimit-reset-* headers do, as a
// Go duration ("1.2s", "345ms", "6m0s"), rounded up to the millisecond so that
// a client waiting for it never comes back early.
func formatReset(d time.Duration) string {
	return (time.Duration(ceilDiv(d, time.Millisecond)) * time.Millisecond).String()
}

// ceilDiv returns d/unit rounded up, for d >= 0.
func ceilDiv(d, unit time.Duration) int64 {
	return int64((max(d, 0) + unit - 1) / unit)
}

// sleep waits for d or until done is closed, and reports whether d passed.
func sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
