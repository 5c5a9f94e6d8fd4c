package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/llmbatch/llmbatch/llm"
)

// read streams the input into items through the run's [source]: records
// to send, and rejected lines (as items carrying their error) for the
// writer to record. It returns an error only when the input cannot be read.
func (r *run) read(ctx context.Context, items chan<- *Item) error {
	defer close(items)
	src := newSource(r.cfg, r.shaper, r.j)
	defer src.close()
	for {
		it, err := src.next(ctx)
		switch {
		case err == io.EOF:
			r.readAll.Store(true)
			return nil
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
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
