package pace

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"
)

// Config sets up a [Limiter]. The zero value imposes no limit and learns
// nothing.
type Config struct {
	RPM         int          // requests per minute, per model; 0: unknown (no limit until one is learned)
	TPM         int          // estimated tokens per minute, per model; 0: unknown
	Concurrency int          // requests in flight per model at most; 0: no limit here (the caller bounds it)
	Adapt       bool         // learn the server's limits from its refusals and headers
	Margin      float64      // a told RPM/TPM is paced at limit/(1+Margin), so a window-counting server never sees one too many and a run takes at most 1+Margin the time the limit allows (at the limit itself where the headers show a bucket refilling at it: see bucket.go); 0..0.5
	Logger      *slog.Logger // each change of an effective limit at info level; default discards
	Shared      Sharer       // limits shared with other processes using the key (DESIGN §9); nil: this process alone
}

// Limiter paces the requests of a whole run, each model in a lane of its
// own (providers limit models separately). See the package doc for the way
// a request goes through it.
//
// Limiter is safe for simultaneous use by multiple goroutines and starts no
// goroutines. A nil *Limiter imposes no limit: its Acquire returns a nil
// *Permit, whose methods do nothing.
type Limiter struct {
	cfg Config
	log *slog.Logger
	now func() time.Time // the clock: the only place time is read

	mu    sync.Mutex
	lanes map[string]*lane
}

// New returns a limiter set up by cfg.
func New(cfg Config) *Limiter {
	cfg.Margin = min(max(cfg.Margin, 0), 0.5)
	l := &Limiter{cfg: cfg, log: cfg.Logger, now: time.Now, lanes: map[string]*lane{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Acquire waits until a request for model, estimated at tokens tokens, may
// be sent, and returns its permit, whose Done the caller must call with
// the outcome (or Release, with none). It returns ctx.Err() (or its cause)
// when ctx ends first.
func (l *Limiter) Acquire(ctx context.Context, model string, tokens int) (*Permit, error) {
	if l == nil {
		return nil, ctx.Err()
	}
	return l.lane(model).acquire(ctx, max(tokens, 0))
}

// Pause holds every request of model until d from now. A shorter pause
// never shortens a longer one already set.
func (l *Limiter) Pause(model string, d time.Duration) {
	if l != nil {
		ln := l.lane(model)
		ln.mu.Lock()
		ln.pause(d)
		ln.mu.Unlock()
	}
}

// Effective returns the request and token limits per minute in force for
// model now (0: none), for reports.
func (l *Limiter) Effective(model string) (rpm, tpm float64) {
	if l == nil {
		return 0, 0
	}
	ln := l.lane(model)
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return perMinute(ln.req.pace()), perMinute(ln.tok.pace())
}

// Models returns the models the limiter has seen, sorted.
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
	slices.Sort(ms)
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

// ceiling returns a told limit per minute as units per second less the
// margin, +Inf when untold. The margin is taken as time: a run paced at
// the ceiling takes 1+Margin the time the limit allows, no more (DESIGN
// §5a), and keeps Margin/(1+Margin) of the rate in reserve.
func (l *Limiter) ceiling(perMin int) float64 {
	if perMin <= 0 {
		return math.Inf(1)
	}
	return float64(perMin) / 60 / (1 + l.cfg.Margin)
}

// opening returns the request pace, a second, that a told limit a minute
// allows until the server first answers: the ceiling, but no more than
// one less than the limit a minute; 0 (no cap) when untold or the limit
// is 1. The pace's burst of one lets the first request go at once, so a
// minute from any instant holds up to 1 + pace x 60 of the lane's sends,
// and a server that counts a trailing minute (a sliding counter weighs
// the minute before nearly whole just past its end) sees one too many
// wherever the margin holds less than one request (a limit under 35 a
// minute, at 3%): told 24 a minute, 24 went in the first minute and the
// 25th, at 61.8 s, was refused before any answer could tell the tracker
// the window. Once answered, the tracker and the estimator hold the pace.
func (l *Limiter) opening(perMin int) float64 {
	if perMin <= 1 {
		return 0
	}
	return min(l.ceiling(perMin), float64(perMin-1)/60)
}

func perMinute(perSecond float64) float64 {
	if math.IsInf(perSecond, 1) {
		return 0
	}
	return perSecond * 60
}
