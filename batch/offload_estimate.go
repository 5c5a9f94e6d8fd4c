package batch

import (
	"context"
	"errors"
	"io"

	"github.com/llmbatch/llmbatch/batch/batchapi"
)

// BatchAPIEstimate is what a Batch API run of the input would submit,
// worked out without sending anything (--dry-run --batch-api).
type BatchAPIEstimate struct {
	Estimate                  // the items to send (no merging in this mode)
	Shards   []batchapi.Plan  // the new shards, numbered after the journal's
	Live     int64            // items in shards already under way: not counted again
	Earlier  []batchapi.Shard // the journal's shards
}

// EstimateBatchAPI reads cfg.Input through the run's own reader, as
// [RunBatchAPI] would, and cuts what it would send into shards within
// api's limits, writing no file. The journal, if any, is only read.
func EstimateBatchAPI(ctx context.Context, cfg Config, api BatchAPIConfig) (*BatchAPIEstimate, error) {
	cfg.setDefaults()
	api.setDefaults()
	cfg.Counters = &Counters{}
	shaper, err := newShaper(&cfg)
	if err != nil {
		return nil, err
	}
	rec, err := loadRecorded(&cfg)
	if err != nil {
		return nil, err
	}
	e := &BatchAPIEstimate{Estimate: Estimate{Models: map[string]*ModelEstimate{}}}
	o := &offload{cfg: &cfg, api: &api, dir: ShardDir(cfg.Output), live: map[[16]byte]int{}, tr: batchapi.NewTracker(api.policy())}
	if e.Earlier, err = LoadShards(cfg.Checkpoint); err != nil {
		return nil, err
	}
	last := 0
	for _, s := range e.Earlier {
		last = max(last, s.N)
		if s.Phase != batchapi.Finished {
			// A shard without its items file counts as empty: it is only a dry run.
			_ = o.eachMeta(s, func(m itemMeta) error { o.live[hashOf(m.ID)] = s.N; return nil })
		}
	}
	sp := o.newPlanner(0)
	sp.cfg.Dir, sp.cfg.First = "", last+1 // no files: numbers, sizes and hashes only
	sp.p = batchapi.NewPlanner(sp.cfg)
	src := newSource(&cfg, cfg.Input, shaper, rec)
	defer src.close()
	if err := e.read(ctx, src, o, sp); err != nil {
		return nil, err
	}
	e.addLines(cfg.Counters, src.badBefore)
	e.Shards = sp.plans
	return e, nil
}

// read takes in every item of src.
func (e *BatchAPIEstimate) read(ctx context.Context, src *source, o *offload, sp *shardPlanner) error {
	for {
		it, err := src.next(ctx)
		switch {
		case err == io.EOF:
			_, err := sp.flush()
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return &SetupError{err}
		case it.rejected != nil || it.onlyFix:
			continue
		case o.inShard(it.ID) > 0:
			e.Live++
			continue
		}
		if err := sp.add(it); err != nil && !errors.As(err, new(*batchapi.ItemError)) {
			return err
		}
		e.addItem(it)
	}
}
