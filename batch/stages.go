package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

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
	defer seen.close()
	c := r.cfg.Counters
	// Lines rejected by earlier runs are looked up only when there are any:
	// those of this run are all behind the reader.
	_, _, bad := r.j.Counts()
	for {
		line, n, err := lr.next()
		var le *LineError
		var it *Item
		switch {
		case err == io.EOF:
			r.readAll.Store(true)
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
		wasBad := bad > 0 && r.lineWasBad(n)
		switch {
		case le != nil && wasBad:
			c.Bad.Add(1)
			continue // recorded by an earlier run
		case le != nil:
			c.Bad.Add(1)
			it = &Item{ID: le.ID, Line: n, rejected: le}
		case r.skip(it):
			if !wasBad {
				continue
			}
			// The line was fixed into one done earlier (lines moved, say):
			// only its rejection is to be cleared.
			it = &Item{Line: n, fixes: n, onlyFix: true}
		case wasBad:
			it.fixes = n // the line was fixed: its answer clears its rejection
		}
		select {
		case items <- it:
			r.queued.Add(1)
		case <-r.stopped:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// lineWasBad reports whether an earlier run rejected input line n.
func (r *run) lineWasBad(n int) bool {
	st, ok := r.j.Status(lineKey(n))
	return ok && st == checkpoint.Bad
}

// classify shapes a line into an item, or says why it is rejected.
func (r *run) classify(line []byte, n int, seen *idSet) (*Item, *LineError) {
	it, id, err := r.shaper.shape(line)
	if err == nil {
		if fresh, serr := seen.add(it.ID); serr != nil {
			r.stop(&StopError{serr})
			return nil, &LineError{Line: n, ID: id, Err: serr}
		} else if !fresh {
			err = ErrDuplicateID
		}
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
	if it.onlyFix {
		return outcome{item: it}, true
	}
	model, body, attempts := it.Model, it.Body, 0
	for next := 0; ; next++ {
		resp, n, err := r.cfg.Client.Do(ctx, &llm.Request{Model: model, Body: body, Tokens: it.Tokens, Label: it.ID})
		attempts += n
		if err == nil {
			return outcome{item: it, resp: resp, attempts: attempts}, true
		}
		var ae *llm.APIError
		switch {
		case ctx.Err() != nil:
			return outcome{}, false
		case errors.Is(err, llm.ErrStopped):
			r.limiterClosed(err)
			return outcome{}, false
		case errors.As(err, &ae) && ae.Kind.StopsRun():
			r.stop(&StopError{err})
			return outcome{}, false
		case next < len(r.cfg.Fallbacks) && fallsBack(ae):
			if b, berr := withModel(it.Body, r.cfg.Fallbacks[next]); berr == nil {
				r.cfg.Logger.Info("trying a fallback model", "id", it.ID, "from", model, "to", r.cfg.Fallbacks[next], "err", err)
				model, body = r.cfg.Fallbacks[next], b
				continue
			}
		}
		r.cfg.Logger.Debug("item failed", "id", it.ID, "line", it.Line, "attempts", attempts, "err", err)
		return outcome{item: it, err: err, attempts: attempts}, true
	}
}

// fallsBack reports whether an item that failed so should be tried on the
// next fallback model: the model is down (5xx, no answer) or unknown.
func fallsBack(ae *llm.APIError) bool {
	if ae == nil {
		return false
	}
	return ae.Kind == llm.Transient || ae.Status == 404 ||
		strings.Contains(ae.Code, "model_not_found") || strings.Contains(strings.ToLower(ae.Message), "model not found")
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

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
