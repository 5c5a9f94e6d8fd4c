package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/llmbatch/llmbatch/llm"
)

// watch is the stage that turns Config.Stop into a drain and, once the run
// drains (a stop, a cancel, or the end), ends a read of the input that may
// be blocked on a silent pipe, so that the reader stage ends too.
func (r *run) watch() error {
	select {
	case <-r.cfg.Stop: // nil: never
		r.stop(ErrInterrupted)
	case <-r.drained.Done():
	}
	if !r.readAll.Load() {
		r.in.interrupt()
	}
	return nil
}

// stage wraps a stage for the group: a stop it returns (a *StopError or
// ErrInterrupted) drains the run, so that what is in flight is finished and
// written; any other error ends the group, cancelling every stage.
func (r *run) stage(f func() error) func() error {
	return func() error {
		err := f()
		if errors.As(err, new(*StopError)) || errors.Is(err, ErrInterrupted) {
			r.stop(err)
			return nil
		}
		return err
	}
}

// read is the reader stage: it streams the input through the run's
// [source] into items, records to send and rejected lines (as items
// carrying their error) for the writer to record, and closes items. It
// returns a *StopError when the input cannot be read, and nil at its end or
// once the run drains.
func (r *run) read(items chan<- *Item) error {
	defer close(items)
	src := newSource(r.cfg, r.in.r, r.shaper, r.j)
	defer src.close()
	for {
		it, err := src.next(r.drained)
		switch {
		case err == io.EOF:
			r.readAll.Store(true)
			return nil
		case r.drained.Err() != nil:
			return nil // the read may have been interrupted: the run is over
		case err != nil:
			return &StopError{err}
		}
		select {
		case items <- it:
			r.queued.Add(1)
		case <-r.drained.Done():
			return nil
		}
	}
}

// workers is the stage of the Concurrency workers, in a group of their
// own; it closes results once the last one has ended.
func (r *run) workers(ctx context.Context, groups <-chan []*Item, results chan<- outcome, writerGone <-chan struct{}) error {
	defer close(results)
	wg, wctx := errgroup.WithContext(ctx)
	for range r.cfg.Concurrency {
		emit := emitter(results, writerGone)
		wg.Go(r.stage(func() error { return r.work(wctx, groups, emit) }))
	}
	return wg.Wait()
}

// emitter returns a worker's emit: it hands an outcome to the writer and
// waits until the writer has handed its line to the OS, so that no worker
// sends a request while an answer of its own is unwritten: a kill of the
// process loses at most Concurrency answers. emit returns false when the
// writer is gone.
//
// It selects on the writer's end rather than on ctx: the writer takes every
// outcome until results is closed, so an answer in hand is written even
// after a hard stop, and only a writer that failed (and cancelled the
// group) leaves it unwritten.
func emitter(results chan<- outcome, writerGone <-chan struct{}) func(outcome) bool {
	ack := make(chan struct{}, 1)
	return func(o outcome) bool {
		o.ack = ack
		select {
		case results <- o:
		case <-writerGone:
			return false
		}
		select {
		case <-ack:
			return true
		case <-writerGone:
			return false
		}
	}
}

// work sends groups of items until there are none left or the run drains.
// It returns a *StopError when the API stops the run.
func (r *run) work(ctx context.Context, groups <-chan []*Item, emit func(outcome) bool) error {
	for r.drained.Err() == nil {
		select {
		case g, ok := <-groups:
			if !ok {
				return nil
			}
			if more, err := r.sendGroup(ctx, g, emit); !more || err != nil {
				return err // the run stopped or cannot write
			}
		case <-r.drained.Done():
		}
	}
	return nil
}

// send makes the request for one item. It returns the item's outcome with
// ok, or ok false when the item gets no outcome in this run (the run
// drained or was cancelled first, so a rerun sends it again), with a
// *StopError when the API stopped the run.
func (r *run) send(ctx context.Context, it *Item) (o outcome, ok bool, err error) {
	if it.rejected != nil {
		return outcome{item: it, bad: it.rejected}, true, nil
	}
	if it.onlyFix {
		return outcome{item: it}, true, nil
	}
	model, body, attempts := it.Model, it.Body, 0
	for next := 0; ; next++ {
		resp, n, err := r.do(ctx, r.request(model, body, it.Tokens, it.MaxOutput, it.ID), it)
		attempts += n
		if err == nil {
			return outcome{item: it, resp: resp, attempts: attempts}, true, nil
		}
		if stop, serr := r.stopsItem(ctx, err); stop {
			return outcome{}, false, serr
		}
		if ae, _ := errors.AsType[*llm.APIError](err); next < len(r.cfg.Fallbacks) && fallsBack(ae) {
			if b, berr := withModel(it.Body, r.cfg.Fallbacks[next]); berr == nil {
				r.cfg.Logger.Info("trying a fallback model", "id", it.ID, "from", model, "to", r.cfg.Fallbacks[next], "err", err)
				model, body = r.cfg.Fallbacks[next], b
				continue
			}
		}
		r.cfg.Logger.Debug("item failed", "id", it.ID, "line", it.Line, "attempts", attempts, "err", err)
		return outcome{item: it, err: err, attempts: attempts}, true, nil
	}
}

// request is the client request for a body, which drains with the run:
// tokens its estimate, output the part of it that is max_tokens.
func (r *run) request(model string, body []byte, tokens, output int, label string) *llm.Request {
	return &llm.Request{Model: model, Body: body, Tokens: tokens, Output: output, Label: label, Drain: r.drained.Done()}
}

// stopsItem reports whether a request's err leaves its items without an
// outcome in this run: the run was cancelled or drained before an answer,
// or the API stops the run (then serr is the *StopError to return).
func (r *run) stopsItem(ctx context.Context, err error) (stop bool, serr error) {
	var ae *llm.APIError
	switch {
	case ctx.Err() != nil:
		return true, nil
	case errors.Is(err, llm.ErrStopped):
		if r.drained.Err() == nil { // not our drain: someone closed the limiter
			return true, &StopError{err}
		}
		return true, nil
	case errors.As(err, &ae) && ae.Kind.StopsRun():
		return true, &StopError{err}
	}
	return false, nil
}

// fallsBack reports whether an item that failed so should be tried on the
// next fallback model: the model is down (5xx, no answer) or unknown.
func fallsBack(ae *llm.APIError) bool {
	if ae == nil {
		return false
	}
	return ae.Kind == llm.Transient || ae.Kind == llm.ModelNotFound
}

// withModel returns body with its model replaced.
func withModel(body []byte, model string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	m["model"], _ = json.Marshal(model)
	return json.Marshal(m)
}
