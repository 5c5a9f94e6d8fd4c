package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmbatch/llmbatch/llm/pace"
)

// Do sends req until it succeeds, fails in a way that retrying cannot help,
// or runs out of attempts. It returns the number of attempts made with:
//   - (resp, n, nil) on success;
//   - (nil, n, *APIError) when the last attempt failed;
//   - (nil, n, ctx.Err()) when ctx ended;
//   - (nil, n, err) with errors.Is(err, ErrStopped) when req.Drain was
//     closed before the next attempt could be sent; err also wraps the last
//     attempt's *APIError, if there was one, so check ErrStopped first.
//
// Every attempt, retries included, waits for the limiter first. A 429
// about requests pauses every request of the model, not only this one. A
// rate-limit 429 uses up one of MaxAttempts only while no other request
// gets through: it is a signal to slow down, not a verdict on the request.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, int, error) {
	waitCtx, cancel := drainContext(ctx, req.Drain)
	defer cancel()
	var last *APIError
	tries := 0 // attempts that count against MaxAttempts
	began := time.Now()
	for n := 1; ; n++ {
		if err := c.health.broken(c.cfg.BreakAfter); err != nil {
			return nil, n - 1, err
		}
		t, err := c.try(ctx, waitCtx, req)
		if err != nil {
			return nil, n - 1, stopped(drained(ctx, err), last)
		}
		if t.err == nil {
			return t.resp, n, nil
		}
		if ctx.Err() != nil {
			return nil, n, ctx.Err()
		}
		if !errors.As(t.err, &last) {
			return nil, n, t.err
		}
		switch c.verdict(n, &tries, last, t, began) {
		case otherKey:
			continue
		case giveUp:
			return nil, n, t.err
		}
		d := c.backOff(req, n, tries, last, t)
		if err := sleep(waitCtx, d); err != nil {
			return nil, n, stopped(drained(ctx, err), last)
		}
	}
}

// What [Client.Do] does after a failed attempt (see verdict).
const (
	backOffAndRetry = iota
	otherKey        // another key takes the next attempt at once
	giveUp
)

// verdict says what Do does after attempt n failed with last, counting it
// in tries when it counts against MaxAttempts (see counted). A refused
// key is dropped (no more than once a key), a busy one rests, and another
// key takes the next attempt at once; an error retrying cannot help, or
// attempts spent, gives up; anything else backs off and retries.
func (c *Client) verdict(n int, tries *int, last *APIError, t tried, began time.Time) int {
	if t.ki >= 0 && c.keyFailed(t.ki, last) && (last.Kind != RateLimited || n < c.maxAttempts()) {
		return otherKey
	}
	if !last.Kind.Retryable() {
		return giveUp
	}
	*tries += c.counted(last, t.sent, began)
	if *tries >= c.cfg.MaxAttempts || n >= c.maxAttempts() {
		return giveUp
	}
	return backOffAndRetry
}

// tried is one attempt of [Client.Do]: its answer or error, when it was
// sent, the key it used (-1: the only one) and how long the limiter says
// the request should hold before the next.
type tried struct {
	resp *Response
	err  error
	sent time.Time
	ki   int
	hold time.Duration
}

// try waits for a key and the limiter (on waitCtx, which a drain ends) and
// makes one attempt (on ctx). Its error is that of a wait; the attempt's
// own is in the result.
func (c *Client) try(ctx, waitCtx context.Context, req *Request) (tried, error) {
	// The key first: waiting for a resting key must not hold a permit,
	// or every waiter would go at once when the key is back.
	ki, key, err := c.pickKey(waitCtx)
	if err != nil {
		return tried{}, err
	}
	tokens := c.scale.apply(req.Model, req.Tokens, req.Output)
	p, err := c.cfg.Limiter.Acquire(waitCtx, req.Model, tokens)
	if err == nil && waitCtx.Err() != nil { // drained as the permit came
		p.Release()
		err = waitCtx.Err()
	}
	if err != nil {
		return tried{}, err
	}
	c.stats.attempts.Add(1)
	t := tried{ki: ki, sent: time.Now()}
	t.resp, t.err = c.attempt(ctx, req.Body, key)
	if ae := (*APIError)(nil); errors.As(t.err, &ae) {
		ae.settle(tokens)
	}
	if t.err == nil && t.resp.Chat.Usage != nil {
		c.scale.learn(req.Model, req.Tokens-req.Output, t.resp.Chat.Usage.PromptTokens)
	}
	t.hold = c.report(p, t.resp, t.err, ki >= 0)
	return t, nil
}

// counted returns 1 when a failed attempt sent at sent counts against
// MaxAttempts, 0 when not: a 429 counts only if nothing got through in the
// last minute (since the request began, if later), since the pause a 429
// sets holds the other requests too, so a shorter look would miss them.
func (c *Client) counted(last *APIError, sent, began time.Time) int {
	since := sent.Add(-time.Minute)
	if since.Before(began) {
		since = began
	}
	if last.Kind == RateLimited && c.health.gotThrough(since) {
		return 0
	}
	return 1
}

// backOff returns how long to wait before the next attempt after t failed
// with last, pauses the model for a request-429 the limiter said nothing
// of, and counts and logs the retry.
func (c *Client) backOff(req *Request, n, tries int, last *APIError, t tried) time.Duration {
	d := c.retryDelay(tries, last, t.hold)
	if last.Kind == RateLimited && t.hold == 0 && !last.tokenLimit && t.ki < 0 {
		c.cfg.Limiter.Pause(req.Model, d) // every worker of this model waits
	}
	c.stats.retried(last, d)
	source := "backoff"
	if last.RetryAfter > 0 {
		source = last.hintFrom
	} else if last.Kind == RateLimited && t.hold > 0 {
		source = "limiter"
	}
	c.log.Debug("retry", "request", req.Label, "attempt", n, "status", last.Status,
		"kind", last.Kind.String(), "delay", d, "source", source)
	return d
}

// maxAttempts bounds the attempts of one request, counted or not: a
// server that refuses one request for ever while it admits others must
// not hold the run for ever.
func (c *Client) maxAttempts() int { return 20 * c.cfg.MaxAttempts }

// report tells the limiter and the breaker how an attempt went, and
// returns how long the limiter says the request should wait before its
// next attempt.
func (c *Client) report(p *pace.Permit, resp *Response, err error, keyed bool) time.Duration {
	var ae *APIError
	switch {
	case err == nil:
		c.health.record(true)
		c.health.succeeded()
		o := outcome(resp.Header, nil, keyed, time.Now(), p.Sent())
		o.Used = usedTokens(resp)
		return p.Done(o)
	case errors.As(err, &ae):
		if ae.Kind == RateLimited {
			c.stats.limited.Add(1)
		}
		c.health.record(ae.Kind != Transient)
		return p.Done(outcome(ae.header, ae, keyed, time.Now(), p.Sent()))
	default: // the caller's context ended: say nothing of the server
		p.Release()
		return 0
	}
}

// drainContext returns a context for the waits of one request: it ends
// with ctx, or when drain is closed. The goroutine that watches drain ends
// when cancel is called, before Do returns.
func drainContext(ctx context.Context, drain <-chan struct{}) (context.Context, context.CancelFunc) {
	if drain == nil {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	select {
	case <-drain:
		cancel(ErrStopped)
		return wctx, func() {}
	default:
	}
	go func() {
		select {
		case <-drain:
			cancel(ErrStopped)
		case <-wctx.Done():
		}
	}()
	return wctx, func() { cancel(nil) }
}

// drained turns the end of a wait that the drain, not ctx, caused into
// ErrStopped.
func drained(ctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(err, context.Canceled) {
		return ErrStopped
	}
	return err
}

// stopped adds the last attempt's error to ErrStopped, so that the reason
// the request had not yet succeeded is not lost.
func stopped(err error, last *APIError) error {
	if last == nil || !errors.Is(err, ErrStopped) {
		return err
	}
	return fmt.Errorf("%w (last error: %w)", err, last)
}

// delay returns how long to wait before retrying after attempt n failed: the
// server's hint when there is one (never cut short), the backoff otherwise.
func (c *Client) delay(n int, ae *APIError) time.Duration {
	d := ae.RetryAfter
	if d <= 0 {
		d = c.cfg.Backoff(n)
	}
	return d
}

// retryDelay is delay for a chat request after its tries-th counted
// failure, given what the limiter said (hold): after a 429, the longer of
// the hint and the hold, and with no hint the hold alone if there is one
// (the limiter paces the retry).
func (c *Client) retryDelay(tries int, ae *APIError, hold time.Duration) time.Duration {
	if ae.Kind == RateLimited && ae.RetryAfter <= 0 && hold > 0 {
		return hold
	}
	return max(c.delay(max(tries, 1), ae), hold)
}
