package llm

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmbatch/llmbatch/llm/pace"
)

// Limiter paces the requests of a whole run, each model on its own: the
// request and token paces told or learned, the concurrency gate, the pause
// a 429 sets for every worker of its model, and the server's windows as its
// headers tell them. It is [pace.Limiter]; see package pace for how a
// request goes through it. Safe for simultaneous use; a nil *Limiter
// imposes no limit.
type Limiter = pace.Limiter

// LimiterConfig sets up a [Limiter]; it is [pace.Config].
type LimiterConfig = pace.Config

// NewLimiter returns a limiter allowing rpm requests and tpm tokens per
// minute for each model, 0 meaning no limit of that kind, and learning
// nothing. Requests are spread evenly, one at a time, so a server counting
// in windows sees no spike.
func NewLimiter(rpm, tpm int) *Limiter { return pace.New(pace.Config{RPM: rpm, TPM: tpm}) }

// NewLimiterConfig returns a limiter set up by cfg.
func NewLimiterConfig(cfg LimiterConfig) *Limiter { return pace.New(cfg) }

// outcome is what the limiter is told of an attempt: err is nil on
// success; h is the response's header, nil when none arrived; now is when
// it arrived.
func outcome(h http.Header, err *APIError, keyed bool, now, sent time.Time) pace.Outcome {
	o := pace.Outcome{Result: pace.Admitted, Keyed: keyed}
	switch {
	case err != nil && err.Kind == RateLimited:
		o.Result, o.Tokens, o.Unsure, o.Hint = pace.Refused, err.tokenLimit, !err.tokenSure, err.RetryAfter
	case err != nil && err.Status == 0:
		return pace.Outcome{Result: pace.Lost}
	}
	if h != nil {
		lim := parseLimits(h, nil, now)
		took := max(now.Sub(cmp.Or(sent, now)), 0)
		o.Requests, o.TokenWindow = reading(lim.Requests, took), reading(lim.Tokens, took)
		// Fine only as its own header told it: a hint taken from a
		// window's reset (no hint given) may be in whole seconds.
		o.FineHint = o.Hint > 0 && err.hintFrom == "header" &&
			(lim.RetryFrom == "retry-after-ms" || lim.RetryFrom == "x-retry-in")
	}
	return o
}

// usedTokens returns the tokens the server counted for resp (its usage:
// total_tokens, else prompt_tokens plus completion_tokens); 0 when it did
// not say. The shared token budget is settled by it.
func usedTokens(resp *Response) int {
	u := resp.Chat.Usage
	switch {
	case u == nil:
		return 0
	case u.TotalTokens > 0:
		return u.TotalTokens
	}
	return max(u.PromptTokens+u.CompletionTokens, 0)
}

// reading turns what a response said of one window, in any header style
// parseLimits reads, into the limiter's terms. Its reset is counted from
// when the request was sent: servers work their headers out when they
// admit a request, before the answer is generated, so counting from the
// answer's arrival would be late by the whole generation. But a reset
// written as a time of the clock finer than whole seconds (Anthropic's RFC
// 3339 resets, Unix milliseconds, Kong's clock-aligned windows) names that
// time, which parseLimits counted from the arrival: took, the time from
// the send to the arrival, counts it from the send. As a delta from the
// send, it put each end a whole generation early.
//
// A whole second (a Unix time in seconds, an HTTP-date) is still taken as
// a delta from the send: it places the end only within a second of it,
// servers that cut it down (ulule/limiter, go-chi/httprate,
// sethvargo/go-limiter) ending their windows up to a second after it,
// servers that round up (express-rate-limit, a bucket's time to full in
// whole seconds) up to a second before it, and the lane is faster held a
// latency early than late. Counted from the arrival (the second itself),
// the mock's bucket and GCRA of 20 a second, their times to full rounded
// up GitHub's way, read as sliding counters with resets a latency longer
// than the second they limit, told 1.06x to 1.09x; ulule's second of 20,
// untold, lost its pace to refusals at its ends, 1.09x to 1.18-1.20x
// (three runs each, TestZoo, TestZooForeign); counted a second before
// it at most, the GCRA's second answered in 1.5 s, untold, 1.11x to 1.50x.
// Took goes with it, for the lane to count it from the arrival once the
// server shows its windows end at the second named (see pace's
// namedSecond).
func reading(l limitInfo, took time.Duration) pace.Reading {
	if !l.Told || l.Reset <= 0 {
		return pace.Reading{}
	}
	r := pace.Reading{Told: true, Limit: max(l.Limit, 0), Left: max(l.Remaining, 0), Reset: l.Reset,
		Window: l.Window, Guessed: l.Guessed, Several: l.Several, Coarse: l.Coarse}
	if l.Clock {
		r.Reset += took
	}
	if l.Coarse {
		r.Took = took
	}
	return r
}

func headerInt(h http.Header, key string) (int, bool) {
	v := strings.TrimSpace(h.Get(key))
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// sleep waits for d, or returns ctx.Err() if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
