package llm

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// rateLimited handles a 429. One about requests pauses the whole lane for
// its hint (or a second); one about tokens holds only its own request (see
// Client.Do), since smaller requests may still fit the window. With Adapt,
// the first 429 of a round of requests schedules a decrease of the limit it
// was about, for when the pause is over: 429s of requests sent before it
// say nothing new.
func (ln *lane) rateLimited(p *permit, ae *APIError) {
	d := ae.RetryAfter
	if d <= 0 {
		d = time.Second
	}
	if p.keyed {
		return // the key rests (see Client.keyFailed); the others go on
	}
	if !ae.tokenLimit {
		ln.pause(d)
	}
	if !ln.l.cfg.Adapt {
		return
	}
	if windowTold(ae.header, "tokens") && ae.tokenLimit {
		// The server tells its token window: waitWindows keeps to it exactly.
		// A rate learned from what got through would be worse: short items
		// get through while long ones wait, and the measure comes out low.
		return
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if p.gen != ln.gen || !ln.decideAt.IsZero() {
		return
	}
	if ae.tokenLimit && ln.tpm == nil {
		// The first word of a token limit, with nothing known of it: until
		// a rate is set, when the hint has passed, everything sent would
		// only find the window spent.
		if until := ln.l.now().Add(d); until.After(ln.pauseUntil) {
			ln.pauseUntil = until
		}
	}
	ln.gen++
	ln.decideAt, ln.decideTok = ln.l.now().Add(d), ae.tokenLimit
	if ln.conc > 0 {
		ln.conc = max(1, math.Min(ln.conc, float64(ln.inflight+1))*0.75)
	}
}

// decide applies a pending decrease once its time has come: the limit goes
// to a little under what got through since the last measure began.
func (ln *lane) decide() {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	now := ln.l.now()
	if ln.decideAt.IsZero() || now.Before(ln.decideAt) {
		return
	}
	span := now.Sub(ln.epoch)
	what, was, is := "rpm", 0.0, 0.0
	if ln.decideTok {
		what = "tpm"
		ln.tpm, was, is = lower(ln.tpm, ln.okTokens, ln.okReqs, span, now, !math.IsInf(ln.tpmCeil, 1), true, float64(ln.maxTokens)/60)
	} else {
		ln.rpm, was, is = lower(ln.rpm, ln.okReqs, ln.okReqs, span, now, !math.IsInf(ln.rpmCeil, 1), false, 0)
	}
	ln.epoch, ln.okReqs, ln.okTokens, ln.decideAt = now, 0, 0, time.Time{}
	if was != is {
		ln.l.log.Info("limit lowered after a 429", "model", ln.model, "limit", what, "from", perMinute(was), "to", perMinute(is))
	}
}

// lower sets the rate to a little under what got through (ok units, in
// count successful requests, over span), and at least decreaseMax below the
// current rate; on a weak measure (few successes) it lowers at most to
// decreaseMin of the current rate. A limit the user gave (told) is trusted
// more: when what got through is near it, a 429 takes only decreaseMax off
// it. The rate never goes under floor per second (for tokens: the biggest
// request a minute), nor under a request a minute. A nil lim is a token
// bucket with tokens. It returns the limiter (created when there was none)
// and the rates before and after.
func lower(lim *rate.Limiter, ok, count float64, span time.Duration, now time.Time, told, tokens bool, floor float64) (*rate.Limiter, float64, float64) {
	cur := math.Inf(1)
	if lim != nil {
		cur = float64(lim.Limit())
	}
	next := cur * decreaseMax
	switch {
	case span >= minMeasure && count >= minCount:
		next = min(next, decreaseTo*ok/span.Seconds())
	case span >= minMeasure && count > 0:
		next = max(min(next, decreaseTo*ok/span.Seconds()), cur*decreaseMin)
	case !math.IsInf(cur, 1):
		next = max(next, cur*decreaseMin)
	}
	if tokens && !math.IsInf(cur, 1) {
		// Token measures swing with the mix of long and short items:
		// never more than halve a token rate at once.
		next = max(next, cur*decreaseMin)
	}
	if told && !math.IsInf(cur, 1) && next >= 0.8*cur {
		next = cur * decreaseMax // near the limit given: a small step down
	}
	if math.IsInf(next, 1) {
		return lim, cur, cur // nothing measured: the pause alone must do
	}
	next = max(next, minRate, floor)
	switch {
	case lim == nil && tokens:
		return newTokenLimiter(next, now), cur, next
	case lim == nil:
		return rate.NewLimiter(rate.Limit(next), 1), cur, next
	}
	lim.SetLimitAt(now, rate.Limit(next))
	if tokens {
		lim.SetBurstAt(now, tokenBurst(next))
	}
	return lim, cur, next
}

// windowTold reports whether h tells the window of what (requests or
// tokens): what is left of it and when it resets.
func windowTold(h http.Header, what string) bool {
	_, left := headerInt(h, "x-ratelimit-remaining-"+what)
	_, reset := parseReset(h.Get("x-ratelimit-reset-"+what), time.Now())
	return left && reset
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
