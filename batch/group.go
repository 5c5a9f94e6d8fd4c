package batch

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// pack is the packer stage: it groups items into requests (see [Packer])
// when merging, and passes each item on alone otherwise. It closes groups
// when items is closed and drained, or when the run drains.
func (r *run) pack(items <-chan *Item, groups chan<- []*Item) error {
	defer close(groups)
	if !r.cfg.Merge {
		r.passAlone(items, groups)
		return nil
	}
	p := NewPacker(r.cfg.Packer)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		if d, ok := p.UntilNext(time.Now()); ok {
			t.Reset(d)
		}
		var due [][]*Item
		select {
		case it, ok := <-items:
			if !ok {
				r.hand(groups, p.Flush()...)
				return nil
			}
			due = p.Add(it, time.Now())
		case <-t.C:
			due = p.Due(time.Now())
		case <-r.drained.Done():
			return nil
		}
		if !r.hand(groups, due...) {
			return nil
		}
	}
}

// passAlone passes each item on as a group of its own, until items is
// closed and drained or the run drains.
func (r *run) passAlone(items <-chan *Item, groups chan<- []*Item) {
	for {
		select {
		case it, ok := <-items:
			if !ok || !r.hand(groups, []*Item{it}) {
				return
			}
		case <-r.drained.Done():
			return
		}
	}
}

// hand sends gs to the workers; false when the run drained first.
func (r *run) hand(groups chan<- []*Item, gs ...[]*Item) bool {
	for _, g := range gs {
		select {
		case groups <- g:
		case <-r.drained.Done():
			return false
		}
	}
	return true
}

// sendGroup gets an outcome for every item of a merged group it can, and
// hands each to emit. What the answer leaves out is sent again in a smaller
// group; an answer that is unusable, cut off, or refused (a 400 for size,
// say) is split in halves, down to single requests. It returns more false
// when the run drained or the writer is gone before every item had its
// outcome, with a *StopError when the API stopped the run.
func (r *run) sendGroup(ctx context.Context, items []*Item, emit func(outcome) bool) (more bool, err error) {
	if len(items) == 1 {
		o, ok, err := r.send(ctx, items[0])
		return err == nil && (!ok || emit(o)), err // an item without outcome is left to a rerun
	}
	body, short, err := buildMerged(items, r.jsonMode.Load())
	if err != nil {
		return r.halves(ctx, items, emit)
	}
	req := r.request(items[0].Model, body, mergedTokens(items, r.shaper.tokens), mergedOutput(items), "group:"+items[0].ID)
	resp, n, err := r.do(ctx, req, items...)
	if err != nil {
		return r.groupFailed(ctx, items, err, n, emit)
	}
	if resp.Chat.Choices[0].FinishReason == "length" {
		r.cfg.Logger.Debug("merged answer cut off; splitting", "group", req.Label, "items", len(items))
		return r.halves(ctx, items, emit)
	}
	outputs, err := parseMerged(resp.Content(), short)
	if err != nil && !errors.As(err, new(*MissingError)) {
		r.cfg.Logger.Debug("merged answer unusable; splitting", "group", req.Label, "items", len(items), "err", err)
		return r.halves(ctx, items, emit)
	}
	left, ok := r.emitMerged(items, short, outputs, resp, n, emit)
	switch {
	case !ok:
		return false, nil
	case len(left) == len(items): // nothing usable: a smaller request may do better
		return r.halves(ctx, items, emit)
	case len(left) > 0:
		r.cfg.Logger.Debug("merged answer lacks items; sending them again", "group", req.Label, "missing", len(left))
		return r.sendGroup(ctx, left, emit)
	}
	return true, nil
}

// emitMerged hands on the outcome of every item the merged answer has an
// output for, and returns the items left without one; ok is false when the
// writer is gone.
func (r *run) emitMerged(items []*Item, short []string, outputs map[string]json.RawMessage, resp *llm.Response, n int, emit func(outcome) bool) (left []*Item, ok bool) {
	shares := promptShares(items)
	for i, it := range items {
		out, found := outputs[short[i]]
		if !found {
			left = append(left, it)
			continue
		}
		if !emit(outcome{item: it, resp: resp, attempts: n, output: out, merged: len(items), share: shares[i]}) {
			return nil, false
		}
	}
	return left, true
}

// groupFailed handles a merged request that failed: a stop of the run ends
// it; JSON mode refused by the server is turned off and the group resent;
// anything else splits the group, so that each item finally meets the error
// on its own.
func (r *run) groupFailed(ctx context.Context, items []*Item, err error, attempts int, emit func(outcome) bool) (bool, error) {
	if stop, serr := r.stopsItem(ctx, err); stop {
		return false, serr
	}
	var ae *llm.APIError
	switch {
	case errors.As(err, &ae) && ae.Kind == llm.ResponseFormatUnsupported && r.jsonMode.Load():
		r.cfg.Logger.Info("the server refuses JSON mode; merged requests go without it", "err", ae.Message)
		r.jsonMode.Store(false)
		return r.sendGroup(ctx, items, emit)
	case ae != nil && (ae.Kind == llm.Transient || ae.Kind == llm.RateLimited):
		// Out of attempts on a failing or busy server: halving would only
		// multiply the requests. Each item fails with the group's error.
		for _, it := range items {
			if !emit(outcome{item: it, err: err, attempts: attempts}) {
				return false, nil
			}
		}
		return true, nil
	}
	r.cfg.Logger.Debug("merged request failed; splitting", "items", len(items), "err", err)
	return r.halves(ctx, items, emit)
}

func (r *run) halves(ctx context.Context, items []*Item, emit func(outcome) bool) (bool, error) {
	mid := len(items) / 2
	if more, err := r.sendGroup(ctx, items[:mid], emit); !more || err != nil {
		return more, err
	}
	return r.sendGroup(ctx, items[mid:], emit)
}

// promptShares returns each item's share of the group's prompt tokens, by
// which the answer's usage is apportioned.
func promptShares(items []*Item) []float64 {
	shares := make([]float64, len(items))
	total := 0.0
	for i, it := range items {
		shares[i] = float64(max(1, it.PromptTokens))
		total += shares[i]
	}
	for i := range shares {
		shares[i] /= total
	}
	return shares
}

// apportion returns n times share, rounded.
func apportion(n int, share float64) int { return int(math.Round(float64(n) * share)) }
