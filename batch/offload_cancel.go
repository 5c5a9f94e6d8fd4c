package batch

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/checkpoint"
)

// LoadShards returns the Batch API shards the journal at path records, by
// number, as `llmbatch status` lists them; none for an online job. It
// takes no lock and writes nothing.
func LoadShards(path string) ([]batchapi.Shard, error) {
	snap, err := checkpoint.Load(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, &SetupError{err}
	}
	tr, _, err := replaySteps(snap.Steps(), batchapi.Policy{})
	if err != nil {
		return nil, &SetupError{err}
	}
	return tr.Shards(), nil
}

// CancelBatchAPI cancels, at the provider, every batch of the job whose
// journal is cfg.Checkpoint (cfg.Output's by default) that is not done,
// through cfg.Client, and journals each cancel first. A batch created by a
// killed run and not yet journaled is found by its metadata. The lines
// each batch finished stay in its output; the next run of the job collects
// them and puts what is left into new batches. It returns the shards
// afterwards; a run that holds the journal makes it a *SetupError.
func CancelBatchAPI(ctx context.Context, cfg Config) ([]batchapi.Shard, error) {
	cfg.setDefaults()
	snap, err := checkpoint.Load(cfg.Checkpoint)
	if err != nil {
		return nil, &SetupError{err}
	}
	j, err := checkpoint.Open(cfg.Checkpoint, snap.Settings())
	if err != nil {
		return nil, &SetupError{err}
	}
	defer j.Close()
	api := &BatchAPIConfig{}
	api.setDefaults()
	tr, job, err := replaySteps(j.Steps(), api.policy())
	if err != nil {
		return nil, &SetupError{err}
	}
	o := &offload{cfg: &cfg, api: api, j: j, tr: tr, job: job, dir: ShardDir(cfg.Output), got: map[int]idHashes{}, polled: map[int]bool{}}
	for _, s := range tr.Shards() {
		if err := o.cancelShard(ctx, s); err != nil {
			return tr.Shards(), err
		}
	}
	return tr.Shards(), nil
}

// cancelShard journals the cancel of a shard at the provider and sends it.
func (o *offload) cancelShard(ctx context.Context, s batchapi.Shard) error {
	atProvider := s.Phase == batchapi.Creating || s.Phase == batchapi.Submitted && !s.Status.Done()
	if !atProvider {
		return nil // not submitted yet, or done: nothing to stop there
	}
	if err := o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepCancel, At: time.Now().UnixMilli()}); err != nil {
		return err
	}
	if s.Phase == batchapi.Creating {
		if err := o.find(ctx, s, false); err != nil {
			return err
		}
		if s, _ = o.tr.Shard(s.N); s.Batch == "" {
			return nil // no batch yet: the next run finds none, or finds it and cancels it
		}
	}
	return o.poll(ctx, s, true)
}
