package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// ErrInterrupted is returned by [Run] when Config.Stop was closed: the work
// in flight was recorded and a rerun resumes. (exit 130)
var ErrInterrupted = errors.New("interrupted: rerun the same command to resume")

// StopError is returned by [Run] when the API made going on pointless (bad
// key, spent quota) or the input could not be read to its end. Rerunning
// resumes. (exit 3)
type StopError struct{ Err error }

func (e *StopError) Error() string { return "stopped: " + e.Err.Error() }
func (e *StopError) Unwrap() error { return e.Err }

// Run runs the job described by cfg and returns its summary with:
//   - nil when every item was tried (see [Summary.Complete] for failures);
//   - a *SetupError when nothing could start (nothing was sent);
//   - a *StopError when the API or the input stopped the run;
//   - a *WriteError when a file could not be written;
//   - ErrInterrupted after Config.Stop, or ctx.Err() when ctx was cancelled.
//
// In every case, what was answered before Run returned is durable and
// recorded in the checkpoint.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	cfg.setDefaults()
	shaper, err := newShaper(&cfg)
	if err != nil {
		return nil, err
	}
	w, err := openWriter(&cfg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	r := &run{cfg: &cfg, j: w.j, shaper: shaper, stopped: make(chan struct{})}
	r.jsonMode.Store(cfg.JSONMode)
	w.spend = r.spend
	runErr := r.pipeline(ctx, w)
	if cerr := w.close(runErr == nil || !errors.As(runErr, new(*WriteError))); cerr != nil && runErr == nil {
		runErr = cerr
	}
	s := cfg.Counters.summary(time.Since(start))
	s.Output, s.Errors, s.Checkpoint = cfg.Output, cfg.Errors, cfg.Checkpoint
	return &s, runErr
}

func newShaper(cfg *Config) (*recordShaper, error) {
	s := &recordShaper{model: cfg.Model, system: cfg.System, maxTokens: cfg.MaxTokens, temperature: cfg.Temperature}
	if cfg.Template != "" {
		t, err := template.New("prompt").Option("missingkey=error").Parse(cfg.Template)
		if err != nil {
			return nil, setupErr("template: %v", err)
		}
		s.tmpl = t
	}
	return s, nil
}

// run is the state shared by the stages of one Run.
type run struct {
	cfg    *Config
	j      *checkpoint.Journal
	shaper *recordShaper

	stopOnce sync.Once
	stopped  chan struct{} // closed when no new work is to be taken
	stopErr  error         // why; set once, before stopped is closed

	jsonMode atomic.Bool // JSON mode for merged requests, until the server refuses it

	readAll atomic.Bool  // the reader reached the end of the input
	queued  atomic.Int64 // items (and rejected lines) the reader handed on
}

// finished reports whether every input line got its outcome: a stop that
// came after the last one left nothing undone.
func (r *run) finished() bool {
	return r.readAll.Load() && r.queued.Load() == r.cfg.Counters.outcomes.Load()
}

// stop makes the run take no new work and remembers the first reason.
// Requests in flight go on.
func (r *run) stop(reason error) {
	r.stopOnce.Do(func() {
		r.stopErr = reason
		close(r.stopped)
	})
}

// limiterClosed handles llm.ErrStopped: normally the run's own stop closed
// the limiter; if not, someone else did, and the run cannot go on.
func (r *run) limiterClosed(err error) {
	if !r.isStopped() {
		r.stop(&StopError{err})
	}
}

func (r *run) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// pipeline runs reader → workers → writer. The writer drains every outcome
// the workers produce, so a request answered is always written, unless the
// writer itself failed.
func (r *run) pipeline(ctx context.Context, w *writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan *Item, r.cfg.Concurrency)
	groups := make(chan []*Item, r.cfg.Concurrency)
	results := make(chan outcome, r.cfg.Concurrency*2)
	writerDone := make(chan struct{})

	go func() { // Stop from the caller (a signal)
		select {
		case <-r.cfg.Stop:
			r.stop(ErrInterrupted)
		case <-r.stopped:
		case <-ctx.Done():
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		if err := r.read(gctx, items); err != nil {
			r.stop(&StopError{err})
		}
	}()
	g.Go(func() error {
		r.pack(gctx, items, groups)
		return nil
	})
	var workers sync.WaitGroup
	for range r.cfg.Concurrency {
		workers.Add(1)
		g.Go(func() error {
			defer workers.Done()
			r.work(gctx, groups, results, writerDone)
			return nil
		})
	}
	g.Go(func() error {
		workers.Wait()
		close(results)
		return nil
	})
	var werr error
	g.Go(func() error {
		defer close(writerDone)
		if werr = w.loop(results); werr != nil {
			r.stop(werr)
			cancel() // answers to requests in flight could not be written anyway
		}
		return nil
	})
	g.Wait()
	// The reader ends when the input does or when it sees the stop; only a
	// read from a silent stdin can hold it, and then the process is exiting.
	select {
	case <-readerDone:
	case <-time.After(time.Second):
	}
	switch {
	case werr != nil:
		return werr
	case r.isStopped() && !r.finished():
		return r.stopErr
	case ctx.Err() != nil && !r.finished():
		return ctx.Err()
	}
	return nil
}
