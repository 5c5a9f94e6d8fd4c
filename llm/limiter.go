package llm

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter paces the requests of a whole run: requests per minute, tokens per
// minute, and a gate that a 429 closes for every worker until its hint has
// passed. Limiter is safe for simultaneous use by multiple goroutines.
//
// A nil *Limiter imposes no limit and is never closed.
type Limiter struct {
	rpm *rate.Limiter // nil: no request limit
	tpm *rate.Limiter // nil: no token limit

	mu         sync.Mutex
	pauseUntil time.Time

	closeOnce sync.Once
	closed    chan struct{}
	now       func() time.Time
}

// NewLimiter returns a limiter allowing rpm requests and tpm tokens per
// minute; 0 means no limit of that kind. Requests are spread evenly (a burst
// of about one second's worth) so a server counting in windows sees no spike.
func NewLimiter(rpm, tpm int) *Limiter {
	l := &Limiter{closed: make(chan struct{}), now: time.Now}
	if rpm > 0 {
		l.rpm = rate.NewLimiter(rate.Limit(float64(rpm)/60), max(1, rpm/60))
	}
	if tpm > 0 {
		// A whole minute's tokens as burst: one request may need many tokens,
		// and windows on the server side are a minute long.
		l.tpm = rate.NewLimiter(rate.Limit(float64(tpm)/60), tpm)
	}
	return l
}

// Wait blocks until a request estimated at tokens tokens may be sent: the
// gate is open, and a request and tokens are available. It returns
// ctx.Err() when ctx ends and [ErrStopped] once Close has been called.
//
// A pause that begins while Wait is waiting for its share of the rates holds
// it too: it waits for the gate again, then takes a fresh share, so the
// requests held by a pause are spread out after it rather than all sent the
// moment it ends.
func (l *Limiter) Wait(ctx context.Context, tokens int) error {
	if l == nil {
		return ctx.Err()
	}
	for {
		if err := l.waitGate(ctx); err != nil {
			return err
		}
		if err := l.take(ctx, l.rpm, 1); err != nil {
			return err
		}
		if err := l.take(ctx, l.tpm, l.tokens(tokens)); err != nil {
			return err
		}
		if l.pausedFor() <= 0 {
			return nil
		}
	}
}

// tokens clamps a request's tokens to what the token limit can ever grant:
// a request bigger than a minute's budget can never fit, so it goes through
// at the full budget rather than being refused forever.
func (l *Limiter) tokens(n int) int {
	if l.tpm == nil {
		return 0
	}
	return min(max(n, 1), l.tpm.Burst())
}

// Pause closes the gate for every waiter until d from now (a 429's hint).
// A shorter pause never shortens a longer one already set.
func (l *Limiter) Pause(d time.Duration) {
	if l == nil || d <= 0 {
		return
	}
	until := l.now().Add(d)
	l.mu.Lock()
	if until.After(l.pauseUntil) {
		l.pauseUntil = until
	}
	l.mu.Unlock()
}

// Close makes every present and future Wait return [ErrStopped]. Requests
// already sent are not affected. Close may be called more than once.
func (l *Limiter) Close() {
	if l != nil {
		l.closeOnce.Do(func() { close(l.closed) })
	}
}

// Done returns a channel closed by Close. For a nil Limiter it is nil.
func (l *Limiter) Done() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.closed
}

func (l *Limiter) waitGate(ctx context.Context) error {
	for {
		d := l.pausedFor()
		if err := sleep(ctx, d, l.closed); err != nil || d <= 0 {
			return err
		}
	}
}

// pausedFor returns how much of the pause is left.
func (l *Limiter) pausedFor() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pauseUntil.Sub(l.now())
}

func (l *Limiter) take(ctx context.Context, lim *rate.Limiter, n int) error {
	if lim == nil {
		return nil
	}
	r := lim.ReserveN(l.now(), n)
	if !r.OK() {
		return ErrStopped // cannot happen: n is clamped to the burst
	}
	if err := sleep(ctx, r.DelayFrom(l.now()), l.closed); err != nil {
		r.CancelAt(l.now())
		return err
	}
	return nil
}

// sleep waits for d, or returns ctx.Err() or ErrStopped if ctx ends or stop
// is closed first.
func sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	if d <= 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return ErrStopped
		default:
			return nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return ErrStopped
	}
}
