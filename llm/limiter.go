package llm

import (
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
// success; h is the response's header, nil when none arrived.
func outcome(h http.Header, err *APIError, keyed bool, now time.Time) pace.Outcome {
	o := pace.Outcome{Result: pace.Admitted, Keyed: keyed}
	switch {
	case err != nil && err.Kind == RateLimited:
		o.Result, o.Tokens, o.Hint = pace.Refused, err.tokenLimit, err.RetryAfter
	case err != nil && err.Status == 0:
		return pace.Outcome{Result: pace.Lost}
	}
	if h != nil {
		o.Requests, o.TokenWindow = reading(h, "requests", now), reading(h, "tokens", now)
	}
	return o
}

// reading reads OpenAI's x-ratelimit-limit/remaining/reset-<what> headers.
func reading(h http.Header, what string, now time.Time) pace.Reading {
	left, okLeft := headerInt(h, "x-ratelimit-remaining-"+what)
	reset, okReset := parseReset(h.Get("x-ratelimit-reset-"+what), now)
	if !okLeft || !okReset {
		return pace.Reading{}
	}
	limit, _ := headerInt(h, "x-ratelimit-limit-"+what)
	return pace.Reading{Told: true, Limit: max(limit, 0), Left: max(left, 0), Reset: reset}
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
