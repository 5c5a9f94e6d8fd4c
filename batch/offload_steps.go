package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/llm"
)

// loop takes each shard's next step when it is due, sleeping in between,
// until no shard has a step left; with NoWait, until only waiting is left,
// having read each batch at the provider once.
func (o *offload) loop(ctx context.Context) error {
	for {
		if err := o.stopped(ctx); err != nil {
			return err
		}
		now := time.Now()
		n, a, ok := o.tr.Next(now)
		if !ok && o.api.NoWait {
			n, a, ok = o.unpolled()
		}
		if ok {
			if err := o.step(ctx, n, a); err != nil {
				return err
			}
			continue
		}
		d, waiting := o.tr.UntilNext(now)
		switch {
		case !waiting:
			return o.halt
		case o.api.NoWait:
			return &QueuedError{Shards: o.tr.AtProvider()}
		}
		if err := o.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// unpolled returns a poll of a batch at the provider that this run has
// not read yet: a --no-wait run reads each once, whatever the schedule.
func (o *offload) unpolled() (int, batchapi.Action, bool) {
	for _, s := range o.tr.Shards() {
		if s.Phase == batchapi.Submitted && !s.Status.Done() && !o.polled[s.N] {
			return s.N, batchapi.Action{Do: batchapi.Poll}, true
		}
	}
	return 0, batchapi.Action{}, false
}

// step takes action a for shard n. A network failure that retries could
// not overcome is logged and the step asked for again after a poll
// period (with NoWait, the run stops: the next run goes on); any other
// (a bad key, a refused file) stops the run.
func (o *offload) step(ctx context.Context, n int, a batchapi.Action) error {
	err := o.do(ctx, n, a)
	var ae *llm.APIError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case !errors.As(err, &ae):
		return err
	case !ae.Kind.Retryable() || o.api.NoWait:
		return &StopError{err} // a refusal the provider will repeat, or a bad key
	}
	o.cfg.Logger.Warn("a Batch API step failed; trying again later", "shard", n, "step", a.Do.String(), "err", err)
	return o.sleep(ctx, o.api.PollEvery)
}

func (o *offload) do(ctx context.Context, n int, a batchapi.Action) error {
	s, _ := o.tr.Shard(n)
	switch a.Do {
	case batchapi.Upload:
		return o.upload(ctx, s)
	case batchapi.Create:
		return o.create(ctx, s, a.Record)
	case batchapi.Find:
		return o.find(ctx, s, true)
	case batchapi.Poll:
		return o.poll(ctx, s, false)
	case batchapi.Cancel:
		return o.poll(ctx, s, true)
	case batchapi.Download:
		return o.download(ctx, s)
	case batchapi.Resubmit:
		return o.resubmit(ctx, s, a.Round)
	case batchapi.Online:
		return o.online(ctx, s)
	case batchapi.Report:
		return o.report(s, a.Reason)
	}
	return nil
}

// upload sends the shard's file, checked against its planned hash, and
// journals the file's id.
func (o *offload) upload(ctx context.Context, s batchapi.Shard) error {
	path := o.shardPath(s)
	size, err := batchapi.Verify(path, s.Hash)
	if err != nil {
		o.cfg.Logger.Warn("a planned shard's file is lost; rerun to put its lines into new shards", "shard", s.N, "err", err)
		return o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepDropped, Note: "file lost before upload"})
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fo, err := o.cfg.Client.UploadFile(ctx, filepath.Base(path), f, size)
	if err != nil {
		return err
	}
	return o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepUploaded, At: time.Now().UnixMilli(), File: fo.ID})
}

// create journals the intent, then sends the one create, tagged with the
// job's metadata. A refusal (4xx) is journaled; any other failure leaves
// the shard creating, to be found by its metadata (see find).
func (o *offload) create(ctx context.Context, s batchapi.Shard, intent *batchapi.Record) error {
	if err := o.record(*intent); err != nil {
		return err
	}
	b, err := o.cfg.Client.CreateBatch(ctx, s.File, batchapi.Metadata(o.job, s.N))
	var ae *llm.APIError
	switch {
	case err == nil:
		o.created++
		o.submitted += int64(s.Lines)
		o.polled[s.N] = true // the create's answer is a fresh read
		return o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepCreated, At: time.Now().UnixMilli(),
			Batch: b.ID, Status: b.Status})
	case errors.As(err, &ae) && !ae.Kind.Retryable() && !ae.Kind.StopsRun() && ae.Status >= 400 && ae.Status < 500:
		return o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepRefused, Code: ae.Code, Note: ae.Message})
	}
	return err
}

// find lists the key's batches for the shard's metadata: a create whose
// record (or answer) was lost. Found, the batch is journaled as created
// and any duplicate still running cancelled; not found, with final, the
// create is journaled as absent (it never happened) and is made again.
func (o *offload) find(ctx context.Context, s batchapi.Shard, final bool) error {
	var list []batchapi.Remote
	err := o.cfg.Client.ListBatches(ctx, func(b llm.Batch) bool {
		if b.Metadata[batchapi.MetaJob] == o.job {
			list = append(list, batchapi.RemoteOf(b))
		}
		return true
	})
	if err != nil {
		return err
	}
	m, ok := batchapi.Pick(o.job, s.N, list)
	if !ok {
		if !final {
			return nil
		}
		return o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepAbsent, At: time.Now().UnixMilli()})
	}
	for _, b := range m.Stray {
		if _, err := o.cfg.Client.CancelBatch(ctx, b.ID); err != nil {
			o.cfg.Logger.Warn("cannot cancel a duplicate batch", "batch", b.ID, "err", err)
		}
	}
	o.cfg.Logger.Info("found a batch created before the last run could record it", "shard", s.N, "batch", m.Use.ID)
	return o.record(m.Record(s.N, time.Now()))
}

// reattach looks at once for the batches of shards left creating by a
// killed run, rather than after the listing's settle time: most are there.
func (o *offload) reattach(ctx context.Context) {
	for _, s := range o.tr.Shards() {
		if s.Phase == batchapi.Creating {
			if err := o.find(ctx, s, false); err != nil {
				o.cfg.Logger.Warn("cannot list the batches", "err", err)
				return
			}
		}
	}
}

// poll reads the batch (cancelling it first, with cancel) and journals its
// state when it changed.
func (o *offload) poll(ctx context.Context, s batchapi.Shard, cancel bool) error {
	get := o.cfg.Client.GetBatch
	if cancel {
		get = o.cfg.Client.CancelBatch
	}
	b, err := get(ctx, s.Batch)
	var ae *llm.APIError
	if cancel && errors.As(err, &ae) && ae.Kind == llm.BadRequest {
		b, err = o.cfg.Client.GetBatch(ctx, s.Batch) // done before the cancel came: nothing to cancel
	}
	if err != nil {
		return err
	}
	o.polled[s.N] = true
	r := batchapi.StateRecord(s.N, batchapi.RemoteOf(b), time.Now())
	if !cancel && r.Status == s.Status && (batchapi.Counts{Total: r.Total, Completed: r.Completed, Failed: r.Failed}) == s.Counts {
		return o.tr.Apply(r) // a quiet poll: applied, for the back-off, not journaled
	}
	return o.record(r)
}
