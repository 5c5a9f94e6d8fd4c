package batch

import (
	"context"
	"errors"
	"io"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm"
)

// read streams the input into items: records to send, and rejected lines
// (as items carrying their error) for the writer to record. Items done in an
// earlier run are skipped. It returns an error only when the input cannot
// be read.
func (r *run) read(ctx context.Context, items chan<- *Item) error {
	defer close(items)
	lr := newLineReader(r.cfg.Input, r.cfg.MaxLineBytes)
	seen := newIDSet()
	c := r.cfg.Counters
	for {
		line, n, err := lr.next()
		var le *LineError
		var it *Item
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &le):
		case err != nil:
			return err
		case len(trimSpace(line)) == 0:
			continue // blank lines are allowed between records
		default:
			it, le = r.classify(line, n, seen)
		}
		c.Read.Add(1)
		if le != nil {
			c.Bad.Add(1)
			if _, ok := r.j.Status(lineKey(n)); ok {
				continue // recorded by an earlier run
			}
			it = &Item{ID: le.ID, Line: n, rejected: le}
		} else if r.skip(it) {
			continue
		}
		select {
		case items <- it:
		case <-r.stopped:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// classify shapes a line into an item, or says why it is rejected.
func (r *run) classify(line []byte, n int, seen *idSet) (*Item, *LineError) {
	it, id, err := r.shaper.shape(line)
	if err == nil && !seen.add(it.ID) {
		err = ErrDuplicateID
	}
	if err != nil {
		return nil, &LineError{Line: n, ID: id, Err: err}
	}
	it.Line = n
	return it, nil
}

// skip reports whether an item already has its outcome from an earlier run.
func (r *run) skip(it *Item) bool {
	st, ok := r.j.Status(itemKey(it.ID))
	switch {
	case !ok:
		return false
	case st == checkpoint.Done:
		r.cfg.Counters.Skipped.Add(1)
		return true
	case st == checkpoint.Failed && !r.cfg.RetryFailed:
		r.cfg.Counters.SkippedFailed.Add(1)
		return true
	}
	return false
}

// work sends groups of items until there are none left or the run stops.
func (r *run) work(ctx context.Context, groups <-chan []*Item, results chan<- outcome, writerDone <-chan struct{}) {
	emit := func(o outcome) bool {
		select {
		case results <- o:
			return true
		case <-writerDone: // the writer failed; nothing more can be recorded
			return false
		}
	}
	for {
		if r.isStopped() {
			return
		}
		select {
		case g, ok := <-groups:
			if !ok || !r.sendGroup(ctx, g, emit) {
				return // input done, or the run stopped or cannot write
			}
		case <-r.stopped:
			return
		case <-ctx.Done():
			return
		}
	}
}

// send makes the request for one item. ok is false when the item gets no
// outcome in this run: the run was stopped or cancelled before it was
// answered, so a rerun sends it again.
func (r *run) send(ctx context.Context, it *Item) (outcome, bool) {
	if it.rejected != nil {
		return outcome{item: it, bad: it.rejected}, true
	}
	resp, n, err := r.cfg.Client.Do(ctx, &llm.Request{Model: it.Model, Body: it.Body, Tokens: it.Tokens, Label: it.ID})
	if err == nil {
		return outcome{item: it, resp: resp, attempts: n}, true
	}
	var ae *llm.APIError
	switch {
	case ctx.Err() != nil, errors.Is(err, llm.ErrStopped):
		return outcome{}, false
	case errors.As(err, &ae) && ae.Kind.StopsRun():
		r.stop(&StopError{err})
		return outcome{}, false
	}
	r.cfg.Logger.Debug("item failed", "id", it.ID, "line", it.Line, "attempts", n, "err", err)
	return outcome{item: it, err: err, attempts: n}, true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
