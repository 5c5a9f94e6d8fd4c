package batch

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// pack is the packer stage: it groups items into requests (see [Packer])
// when merging, and passes each item on alone otherwise. It closes groups
// when items is closed and drained, or when the run stops.
func (r *run) pack(ctx context.Context, items <-chan *Item, groups chan<- []*Item) {
	defer close(groups)
	send := func(gs ...[]*Item) bool {
		for _, g := range gs {
			select {
			case groups <- g:
			case <-r.stopped:
				return false
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	if !r.cfg.Merge {
		for {
			select {
			case it, ok := <-items:
				if !ok || !send([]*Item{it}) {
					return
				}
			case <-r.stopped: // the reader may be stuck reading a silent stdin
				return
			case <-ctx.Done():
				return
			}
		}
	}
	p := NewPacker(r.cfg.Packer)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		if d, ok := p.UntilNext(time.Now()); ok {
			t.Reset(d)
		}
		select {
		case it, ok := <-items:
			if !ok {
				send(p.Flush()...)
				return
			}
			if !send(p.Add(it, time.Now())...) {
				return
			}
		case <-t.C:
			if !send(p.Due(time.Now())...) {
				return
			}
		case <-r.stopped:
			return
		case <-ctx.Done():
			return
		}
	}
}

// sendGroup gets an outcome for every item of a merged group it can, and
// hands each to emit. What the answer leaves out is sent again in a smaller
// group; an answer that is unusable, cut off, or refused (a 400 for size,
// say) is split in halves, down to single requests. It returns false when
// the run stopped before every item had its outcome.
func (r *run) sendGroup(ctx context.Context, items []*Item, emit func(outcome) bool) bool {
	if len(items) == 1 {
		o, ok := r.send(ctx, items[0])
		return !ok || emit(o) // an item without outcome is left to a rerun
	}
	body, short, err := buildMerged(items, r.jsonMode.Load())
	if err != nil {
		return r.halves(ctx, items, emit)
	}
	req := &llm.Request{Model: items[0].Model, Body: body, Tokens: mergedTokens(items, r.shaper.tokens), Label: "group:" + items[0].ID}
	resp, n, err := r.cfg.Client.Do(ctx, req)
	if err != nil {
		return r.groupFailed(ctx, items, err, n, emit)
	}
	if resp.Chat.Choices[0].FinishReason == "length" {
		r.cfg.Logger.Debug("merged answer cut off; splitting", "group", req.Label, "items", len(items))
		return r.halves(ctx, items, emit)
	}
	outputs, err := parseMerged(resp.Content(), short)
	var missing *MissingError
	if err != nil && !errors.As(err, &missing) {
		r.cfg.Logger.Debug("merged answer unusable; splitting", "group", req.Label, "items", len(items), "err", err)
		return r.halves(ctx, items, emit)
	}
	shares := promptShares(items)
	var left []*Item
	for i, it := range items {
		out, ok := outputs[short[i]]
		if !ok {
			left = append(left, it)
			continue
		}
		if !emit(outcome{item: it, resp: resp, attempts: n, output: out, merged: len(items), share: shares[i]}) {
			return false
		}
	}
	switch {
	case len(left) == len(items): // nothing usable: a smaller request may do better
		return r.halves(ctx, items, emit)
	case len(left) > 0:
		r.cfg.Logger.Debug("merged answer lacks items; sending them again", "group", req.Label, "missing", len(left))
		return r.sendGroup(ctx, left, emit)
	}
	return true
}

// groupFailed handles a merged request that failed: a stop of the run ends
// it; JSON mode refused by the server is turned off and the group resent;
// anything else splits the group, so that each item finally meets the error
// on its own.
func (r *run) groupFailed(ctx context.Context, items []*Item, err error, attempts int, emit func(outcome) bool) bool {
	var ae *llm.APIError
	switch {
	case ctx.Err() != nil:
		return false
	case errors.Is(err, llm.ErrStopped):
		r.limiterClosed(err)
		return false
	case errors.As(err, &ae) && ae.Kind.StopsRun():
		r.stop(&StopError{err})
		return false
	case errors.As(err, &ae) && ae.Kind == llm.ResponseFormatUnsupported && r.jsonMode.Load():
		r.cfg.Logger.Info("the server refuses JSON mode; merged requests go without it", "err", ae.Message)
		r.jsonMode.Store(false)
		return r.sendGroup(ctx, items, emit)
	}
	if ae != nil && (ae.Kind == llm.Transient || ae.Kind == llm.RateLimited) {
		// Out of attempts on a failing or busy server: halving would only
		// multiply the requests. Each item fails with the group's error.
		for _, it := range items {
			if !emit(outcome{item: it, err: err, attempts: attempts}) {
				return false
			}
		}
		return true
	}
	r.cfg.Logger.Debug("merged request failed; splitting", "items", len(items), "err", err)
	return r.halves(ctx, items, emit)
}

func (r *run) halves(ctx context.Context, items []*Item, emit func(outcome) bool) bool {
	mid := len(items) / 2
	return r.sendGroup(ctx, items[:mid], emit) && r.sendGroup(ctx, items[mid:], emit)
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
