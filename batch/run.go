package batch

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// Run runs the job described by cfg and returns its summary with:
//   - nil when every item was tried (see [Summary.Complete] for failures);
//   - a *SetupError when nothing could start (nothing was sent);
//   - a *StopError when the API or the input stopped the run;
//   - a *WriteError when a file could not be written;
//   - ErrInterrupted after Config.Stop, or ctx.Err() when ctx was cancelled.
//
// In every case, what was answered before Run returned is in the results
// file, and recorded in the checkpoint unless a write failed. Run returns
// only once every goroutine it started has ended (see the package doc).
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
	in := openInput(cfg.Input)
	r := &run{cfg: &cfg, j: w.j, shaper: shaper, in: in}
	r.jsonMode.Store(cfg.JSONMode)
	w.spend, w.stopped, w.provenUp = r.spend, r.stopped, r.provenUp
	runErr := r.pipeline(ctx, w)
	in.close()
	if cerr := w.close(runErr == nil || !errors.As(runErr, new(*WriteError))); cerr != nil && runErr == nil {
		runErr = cerr
	}
	s := cfg.Counters.summary(time.Since(start))
	s.Output, s.Errors, s.Checkpoint = cfg.Output, cfg.Errors, cfg.Checkpoint
	return &s, runErr
}

// run is the state shared by the stages of one Run.
type run struct {
	cfg    *Config
	j      *checkpoint.Journal
	shaper *recordShaper
	in     *input

	// drained is done once the run takes no new work: after a stop (its
	// cause is the reason), when the group is cancelled, or at the end.
	drained context.Context
	drain   context.CancelCauseFunc

	jsonMode atomic.Bool  // JSON mode for merged requests, until the server refuses it
	readAll  atomic.Bool  // the reader reached the end of the input
	queued   atomic.Int64 // items (and rejected lines) the reader handed on
	answers  atomic.Int64 // the server's answers so far (see answered)
}

// stop makes the run take no new work and remembers the first reason.
// Requests in flight go on and are written. It is safe to call from any
// stage, more than once.
func (r *run) stop(reason error) { r.drain(reason) }

// stopped reports whether a stop (not the end of the work) drained the run.
func (r *run) stopped() bool {
	c := context.Cause(r.drained)
	return c != nil && c != errEnded
}

// finished reports whether every input line got its outcome: a stop that
// came after the last one left nothing undone.
func (r *run) finished() bool {
	return r.readAll.Load() && r.queued.Load() == r.cfg.Counters.outcomes.Load()
}

// pipeline runs the stages in one errgroup (see the package doc) and
// returns once every one has ended.
func (r *run) pipeline(ctx context.Context, w *writer) error {
	g, gctx := errgroup.WithContext(ctx)
	r.drained, r.drain = context.WithCancelCause(gctx)
	defer r.drain(errEnded)
	items := make(chan *Item, r.cfg.Concurrency)
	groups := make(chan []*Item, r.cfg.Concurrency)
	results := make(chan outcome) // unbuffered; each worker also waits for its outcome to be written (emitter)
	writerGone := make(chan struct{})
	g.Go(r.watch)
	g.Go(r.stage(func() error { return r.read(items) }))
	g.Go(r.stage(func() error { return r.pack(items, groups) }))
	g.Go(func() error { return r.workers(gctx, groups, results, writerGone) })
	g.Go(func() error {
		defer close(writerGone)
		defer r.drain(errEnded) // nothing is left to send: release the watcher
		return w.run(results)
	})
	return r.result(ctx, g.Wait())
}

// result is Run's error once the stages have ended with err.
func (r *run) result(ctx context.Context, err error) error {
	switch {
	case err != nil:
		return err // a file could not be written
	case r.finished():
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case r.stopped():
		return context.Cause(r.drained)
	}
	return &StopError{errors.New("the run ended with items left undone")}
}
