package llm

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// LimiterConfig sets up a [Limiter]. The zero value imposes no limit and
// learns nothing.
type LimiterConfig struct {
	RPM         int           // requests per minute, per model; 0: unknown (no limit until one is learned)
	TPM         int           // estimated tokens per minute, per model; 0: unknown
	Concurrency int           // requests in flight per model at most; 0: no limit here (the caller bounds it)
	Adapt       bool          // learn lower limits from 429s and x-ratelimit-remaining-* headers, and probe upwards while requests succeed
	Margin      float64       // fraction of a configured RPM/TPM kept in reserve, so a window-counting server never sees one request too many; 0..0.5
	BreakAfter  time.Duration // stop the run when every attempt has failed transiently for this long; 0: never
	Logger      *slog.Logger  // each change of an effective limit at info level; default discards
}

// Limiter paces the requests of a whole run, separately for each model
// (providers limit models separately): requests per minute, tokens per
// minute, requests in flight, and a gate that a 429 closes for every worker
// of that model until its hint has passed. With Adapt, it lowers a limit on
// a 429 (to what actually got through) and raises it slowly while requests
// succeed, so it finds a limit nobody told it.
//
// Limiter is safe for simultaneous use by multiple goroutines. A nil
// *Limiter imposes no limit and is never closed.
type Limiter struct {
	cfg LimiterConfig
	log *slog.Logger
	now func() time.Time

	mu           sync.Mutex
	lanes        map[string]*lane
	failingSince time.Time // first transient failure since the last success; zero when the last attempt succeeded
	failures     int       // transient failures since the last success

	closeOnce sync.Once
	closed    chan struct{}
}

// NewLimiter returns a limiter allowing rpm requests and tpm tokens per
// minute for each model, 0 meaning no limit of that kind, and learning
// nothing. Requests are spread evenly, one at a time, so a server counting in
// windows sees no spike.
func NewLimiter(rpm, tpm int) *Limiter {
	return NewLimiterConfig(LimiterConfig{RPM: rpm, TPM: tpm})
}

// NewLimiterConfig returns a limiter set up by cfg.
func NewLimiterConfig(cfg LimiterConfig) *Limiter {
	cfg.Margin = min(max(cfg.Margin, 0), 0.5)
	l := &Limiter{cfg: cfg, log: cfg.Logger, now: time.Now, lanes: map[string]*lane{}, closed: make(chan struct{})}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Wait blocks until a request of the default model, estimated at tokens
// tokens, may be sent. It returns ctx.Err() when ctx ends and [ErrStopped]
// once Close has been called. The client uses the per-model form
// internally; Wait is for callers that pace something else.
func (l *Limiter) Wait(ctx context.Context, tokens int) error {
	p, err := l.acquire(ctx, "", tokens)
	if err == nil {
		p.release()
	}
	return err
}

// Pause closes the gate of the default model for every waiter until d from
// now. A shorter pause never shortens a longer one already set.
func (l *Limiter) Pause(d time.Duration) {
	if l != nil {
		l.lane("").pause(d)
	}
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

// Effective returns the request and token limits per minute in force for
// model now (0: none), for reports.
func (l *Limiter) Effective(model string) (rpm, tpm float64) {
	if l == nil {
		return 0, 0
	}
	return l.lane(model).effective()
}

// Models returns the models the limiter has seen.
func (l *Limiter) Models() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := make([]string, 0, len(l.lanes))
	for m := range l.lanes {
		ms = append(ms, m)
	}
	return ms
}

func (l *Limiter) lane(model string) *lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln, ok := l.lanes[model]
	if !ok {
		ln = newLane(l, model)
		l.lanes[model] = ln
	}
	return ln
}

// acquire waits until a request for model may be sent and returns the
// permit to report its outcome with. A nil Limiter gives a nil permit, whose
// methods do nothing.
func (l *Limiter) acquire(ctx context.Context, model string, tokens int) (*permit, error) {
	if l == nil {
		return nil, ctx.Err()
	}
	if err := l.broken(); err != nil {
		return nil, err
	}
	return l.lane(model).acquire(ctx, tokens)
}

// breakFailures is how many transient failures in a row, at least, stop a
// run (with BreakAfter).
const breakFailures = 5

// broken returns an *APIError of kind Unavailable when every attempt has
// failed transiently for longer than BreakAfter.
func (l *Limiter) broken() error {
	if l.cfg.BreakAfter <= 0 {
		return nil
	}
	l.mu.Lock()
	since, failures := l.failingSince, l.failures
	l.mu.Unlock()
	// Both a span and a count: one slow request that times out after
	// minutes must not stop a run whose other requests are fine.
	if since.IsZero() || l.now().Sub(since) < l.cfg.BreakAfter || failures < breakFailures {
		return nil
	}
	return &APIError{Kind: Unavailable, Message: "every attempt has failed for " +
		l.now().Sub(since).Round(time.Second).String() + " (the server seems down)"}
}

// health records whether an attempt got an answer of the server's own:
// a success, or a failure that was not transient.
func (l *Limiter) health(ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case ok:
		l.failingSince, l.failures = time.Time{}, 0
	case l.failingSince.IsZero():
		l.failingSince, l.failures = l.now(), 1
	default:
		l.failures++
	}
}

// permit is one request's place in its lane, from acquire to done.
type permit struct {
	ln     *lane
	gen    int // the lane's generation when sent: one decrease per round of requests
	tokens int
	slot   bool      // holds a concurrency slot
	sent   time.Time // when acquire let it go
	flying bool      // sent and not yet answered: in the lane's flying
	keyed  bool      // sent with one of several keys: a 429 rests the key, not the lane
}

// release gives back the concurrency slot without reporting an outcome.
func (p *permit) release() {
	if p == nil {
		return
	}
	if p.slot {
		p.slot = false
		p.ln.releaseSlot()
	}
	if p.flying {
		p.flying = false
		p.ln.landed(p)
	}
}

// done reports the outcome of the attempt: err is nil on success. h is the
// response's header, nil when no response arrived.
func (p *permit) done(h http.Header, err *APIError) {
	if p == nil {
		return
	}
	p.release()
	l := p.ln.l
	switch {
	case err == nil:
		l.health(true)
		p.ln.succeeded(p)
	case err.Kind == RateLimited:
		l.health(true)
		p.ln.rateLimited(p, err)
	case err.Kind == Transient:
		l.health(false)
	default:
		l.health(true)
	}
	if h != nil && !p.keyed { // with several keys, the headers speak of one key's window
		p.ln.remaining(h, p)
	}
}

// sleep waits for d, or returns ctx.Err() or ErrStopped if ctx ends or stop
// is closed first.
func sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	return sleepOrWake(ctx, d, nil, stop)
}

// sleepOrWake is sleep that also ends, with nil, when wake is closed.
func sleepOrWake(ctx context.Context, d time.Duration, wake, stop <-chan struct{}) error {
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
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return ErrStopped
	}
}
