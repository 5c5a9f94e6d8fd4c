package batch

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/internal/jsonl"
	"github.com/llmbatch/llmbatch/llm"
)

// answered reports whether the item id has its outcome: written by this
// run for shard n, or recorded by an earlier one. Downloading a batch's
// output twice therefore writes nothing twice.
func (o *offload) answered(n int, id string) bool {
	if o.got[n] != nil && o.got[n].has(id) {
		return true
	}
	st, ok := o.j.Status(itemKey(id))
	return ok && (st == checkpoint.Done || st == checkpoint.Failed && !o.cfg.RetryFailed)
}

// download reads the batch's output and error files and writes each
// line's outcome, matched to its item by custom_id: a success to the
// results file, a permanent failure to the errors file; a retryable one is
// left for a later shard. Then it journals how many lines still lack an
// outcome.
func (o *offload) download(ctx context.Context, s batchapi.Shard) error {
	metas, err := o.metas(s)
	if err != nil {
		return err
	}
	if o.got[s.N] == nil {
		o.got[s.N] = idHashes{}
	}
	err = o.writing(func(emit func(outcome) error) error {
		for _, id := range []string{s.Output, s.Errors} {
			if id == "" {
				continue
			}
			if err := o.readResults(ctx, s.N, id, metas, emit); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	retry := 0
	for id := range metas {
		if !o.answered(s.N, id) {
			retry++
		}
	}
	if err := o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepCollected, At: time.Now().UnixMilli(), Retry: retry}); err != nil {
		return err
	}
	if o.halt != nil {
		return o.halt
	}
	return nil
}

// readResults writes the outcome of each line of the file fileID.
func (o *offload) readResults(ctx context.Context, n int, fileID string, metas map[string]itemMeta, emit func(outcome) error) error {
	rc, err := o.cfg.Client.FileContent(ctx, fileID)
	if err != nil {
		return err
	}
	defer rc.Close()
	lr := jsonl.NewReader(rc, 0)
	for lr.Next() {
		res, err := batchapi.Classify(lr.Bytes())
		if err != nil {
			o.cfg.Logger.Warn("a line of a batch's output is not a result line", "file", fileID, "line", lr.Line(), "err", err)
			continue
		}
		m, ours := metas[res.CustomID]
		if !ours || o.answered(n, res.CustomID) {
			continue
		}
		oc := outcome{item: m.item(), resp: res.Response, attempts: 1}
		switch res.Class {
		case batchapi.Retry:
			continue
		case batchapi.Halt:
			o.halt = &StopError{res.Err}
			continue
		case batchapi.Permanent:
			oc.resp, oc.err = nil, res.Err
		}
		if err := emit(oc); err != nil {
			return err
		}
		o.got[n].add(res.CustomID)
	}
	return lr.Err()
}

// pending calls fn with each line of shard s that has no outcome yet and
// that no other shard under way holds, with its item (Body set).
func (o *offload) pending(s batchapi.Shard, fn func(*Item) error) error {
	metas, err := o.metas(s)
	if err != nil {
		return err
	}
	f, err := os.Open(o.shardPath(s))
	if err != nil {
		return err
	}
	defer f.Close()
	return batchapi.ReadLines(f, o.api.MaxBytes, func(l batchapi.Line) error {
		m, ok := metas[l.ID]
		if n := o.inShard(l.ID); !ok || o.answered(s.N, l.ID) || n > 0 && n != s.N {
			return nil
		}
		it := m.item()
		it.Body = slices.Clone(l.Body)
		return fn(it)
	})
}

// resubmit puts the shard's lines still without an outcome into new shards
// of the given round, then journals the shard resubmitted.
func (o *offload) resubmit(ctx context.Context, s batchapi.Shard, round int) error {
	sp := o.newPlanner(round)
	defer sp.close()
	err := o.writing(func(emit func(outcome) error) error {
		return o.pending(s, func(it *Item) error { return o.addItem(sp, it, emit) })
	})
	if err == nil {
		err = o.recordPlans(sp)
	}
	if err != nil {
		return err
	}
	o.cfg.Logger.Info("lines without a result go into new shards", "shard", s.N, "shards", len(sp.plans), "round", round)
	return o.finish(s, batchapi.StepResubmitted)
}

// report writes the shard's lines still without an outcome to the errors
// file, as failed for reason, then journals the shard reported.
func (o *offload) report(s batchapi.Shard, reason string) error {
	err := o.writing(func(emit func(outcome) error) error {
		return o.pending(s, func(it *Item) error {
			e := &llm.APIError{Kind: llm.Transient, Code: reason, Message: "no result from the Batch API, resubmitted once: rerun with --retry-failed, or use --batch-api-fallback online"}
			return emit(outcome{item: it, err: e, attempts: 2})
		})
	})
	if err != nil {
		return err
	}
	return o.finish(s, batchapi.StepReported)
}

// online sends the shard's lines still without an outcome through the
// online API (--batch-api-fallback online), then journals the shard
// resubmitted.
func (o *offload) online(ctx context.Context, s batchapi.Shard) error {
	err := o.writing(func(emit func(outcome) error) error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(o.cfg.Concurrency)
		perr := o.pending(s, func(it *Item) error {
			g.Go(func() error { return o.sendOnline(gctx, it, emit) })
			return gctx.Err()
		})
		return errors.Join(g.Wait(), perr)
	})
	if err != nil {
		return err
	}
	return o.finish(s, batchapi.StepResubmitted)
}

// sendOnline sends one item and emits its outcome; an error that stops
// every request stops the run, and the item is left to a rerun.
func (o *offload) sendOnline(ctx context.Context, it *Item, emit func(outcome) error) error {
	resp, n, err := o.cfg.Client.Do(ctx, &llm.Request{Model: it.Model, Body: it.Body, Tokens: it.Tokens, Output: it.MaxOutput, Label: it.ID})
	var ae *llm.APIError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ae) && ae.Kind.StopsRun(), errors.Is(err, llm.ErrStopped):
		return &StopError{err}
	case err != nil:
		return emit(outcome{item: it, err: err, attempts: n})
	}
	return emit(outcome{item: it, resp: resp, attempts: n})
}

// finish journals the shard's last step (record then removes its files).
func (o *offload) finish(s batchapi.Shard, step batchapi.Step) error {
	return o.record(batchapi.Record{Shard: s.N, Step: step, At: time.Now().UnixMilli()})
}

// removeFiles deletes a finished shard's files: nothing will read them again.
func (o *offload) removeFiles(s batchapi.Shard) {
	os.Remove(metaPath(o.shardPath(s)))
	os.Remove(o.shardPath(s))
	delete(o.got, s.N)
}
