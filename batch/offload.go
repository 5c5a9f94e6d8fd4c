package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/checkpoint"
)

// BatchAPIConfig is how [RunBatchAPI] sends a job through the provider's
// Files and Batch API (DESIGN §8). The zero value waits, polls every 30s
// and keeps OpenAI's limits.
type BatchAPIConfig struct {
	NoWait      bool              // submit and collect what is ready, then return a *QueuedError if work is still at the provider
	PollEvery   time.Duration     // first poll period; backs off while nothing changes to 10 times it, at most 5 min; default 30s
	MaxRequests int               // request lines per shard at most; default 50,000
	MaxBytes    int64             // the provider's file-size limit (a shard holds 95% of it); default 200 MB
	Fallback    batchapi.Fallback // where lines go once their one resubmission is spent: the errors file, or online
	PriceFactor float64           // the share of the online price the Batch API charges; 0: half
	Settle      time.Duration     // how long a provider's listing may lag a create; default one minute

	// OnShard, when not nil, is called with a shard each time one of its
	// steps is journaled, for the progress display. It runs on the run's
	// goroutine and must return quickly.
	OnShard func(batchapi.Shard)
}

func (a *BatchAPIConfig) setDefaults() {
	if a.PollEvery <= 0 {
		a.PollEvery = batchapi.DefaultPollEvery
	}
	if a.MaxRequests <= 0 {
		a.MaxRequests = batchapi.DefaultMaxRequests
	}
	if a.MaxBytes <= 0 {
		a.MaxBytes = batchapi.DefaultMaxBytes
	}
	if !(a.PriceFactor > 0 && a.PriceFactor <= 1) {
		a.PriceFactor = batchapi.DefaultFactor
	}
}

// policy is the next-step policy of a's settings. The poll backs off to
// ten times PollEvery, and never past five minutes, so --poll-every 30s
// gives 30s, 1m, 2m, 4m, 5m.
func (a *BatchAPIConfig) policy() batchapi.Policy {
	ceil := min(10*a.PollEvery, batchapi.DefaultPollMax)
	return batchapi.Policy{Poll: batchapi.PollEvery(a.PollEvery, max(ceil, a.PollEvery)), Settle: a.Settle, Fallback: a.Fallback}
}

// QueuedError is returned by [RunBatchAPI] with NoWait when batches are
// still at the provider: everything else was done, and the same command
// run later collects them. (exit 4)
type QueuedError struct{ Shards int }

func (e *QueuedError) Error() string {
	return fmt.Sprintf("%d batches still at the provider: rerun the same command later to collect them", e.Shards)
}

// APISummary is what a Batch API run did: the item figures of [Summary]
// (its cost at batch prices) and the shards'.
type APISummary struct {
	Summary
	Shards    []batchapi.Shard // every shard of the job, as the journal has it at the end
	Created   int              // batches this run created
	Submitted int64            // request lines in them
	Queued    int              // shards still at the provider
}

// RunBatchAPI runs the job described by cfg through the provider's Batch
// API: the same input, results, errors and journal files as [Run], and
// the same exactly-once invariant across kills (see DESIGN §8). It
// returns as Run does, and in addition a *QueuedError when api.NoWait left
// work at the provider. Merging (cfg.Merge) is not supported yet.
func RunBatchAPI(ctx context.Context, cfg Config, api BatchAPIConfig) (*APISummary, error) {
	cfg.setDefaults()
	api.setDefaults()
	if cfg.Merge {
		return nil, setupErr("--merge with --batch-api is not supported yet: run without --merge")
	}
	shaper, err := newShaper(&cfg)
	if err != nil {
		return nil, err
	}
	w, err := openWriter(&cfg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	o := newOffload(&cfg, &api, w, shaper)
	// Each writing call ends by closing its outcomes: failures the writer
	// held back (see heldFailures) are then recorded, never left over.
	w.spend, w.stopped, w.provenUp = o.spend, func() bool { return false }, func(*Item) bool { return true }
	runErr := o.run(ctx)
	if cerr := w.close(runErr == nil || !errors.As(runErr, new(*WriteError))); cerr != nil && runErr == nil {
		runErr = cerr
	}
	s := &APISummary{Summary: cfg.Counters.summary(time.Since(start)), Shards: o.tr.Shards(),
		Created: o.created, Submitted: o.submitted, Queued: o.tr.AtProvider()}
	s.Output, s.Errors, s.Checkpoint = cfg.Output, cfg.Errors, cfg.Checkpoint
	return s, runErr
}

// offload is one Batch API run. It is owned by one goroutine, which alone
// writes the journal, except while a writing call (see writing) lends it
// to the writer.
type offload struct {
	cfg    *Config
	api    *BatchAPIConfig
	w      *writer
	j      *checkpoint.Journal
	shaper *recordShaper
	tr     *batchapi.Tracker
	job    string // the job's fingerprint, the batches' llmbatch_job
	dir    string // the shard files

	live   map[[16]byte]int // ids in shards not finished, and their shard: kept out of new shards
	got    map[int]idHashes // per shard, ids given an outcome by this run (the journal is lean)
	polled map[int]bool     // shards read by this run, for NoWait
	halt   error            // a line error that stops the job, once its shard is collected

	created   int
	submitted int64
}

// idHashes is a set of ids, each held as 16 bytes of its SHA-256.
type idHashes map[[16]byte]struct{}

func newOffload(cfg *Config, api *BatchAPIConfig, w *writer, shaper *recordShaper) *offload {
	return &offload{cfg: cfg, api: api, w: w, j: w.j, shaper: shaper, tr: batchapi.NewTracker(api.policy()),
		dir: ShardDir(cfg.Output), live: map[[16]byte]int{}, got: map[int]idHashes{}, polled: map[int]bool{}}
}

// ShardDir returns the directory of a job's shard files: the results
// file's name plus ".shards".
func ShardDir(out string) string { return out + ".shards" }

// run replays the journal, plans the input's new items into shards and
// takes every shard through its steps.
func (o *offload) run(ctx context.Context) error {
	if err := o.replay(); err != nil {
		return err
	}
	if err := o.prepare(); err != nil {
		return err
	}
	if err := o.plan(ctx); err != nil {
		return err
	}
	o.reattach(ctx)
	return o.loop(ctx)
}

// jobStep is the journal's step line naming the job's fingerprint.
type jobStep struct {
	Step string `json:"step"` // "job"
	Job  string `json:"job"`
}

// replay rebuilds the job's shards from the journal's step lines, and
// reads or makes the job's fingerprint.
func (o *offload) replay() error {
	tr, job, err := replaySteps(o.j.Steps(), o.api.policy())
	if err != nil {
		return &SetupError{fmt.Errorf("checkpoint %s: %w", o.cfg.Checkpoint, err)}
	}
	o.tr, o.job = tr, job
	if o.job != "" {
		return nil
	}
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails
	o.job = "j-" + hex.EncodeToString(b[:])
	line, _ := json.Marshal(jobStep{"job", o.job})
	return o.journal(line)
}

// replaySteps applies a journal's step lines to a new Tracker and returns
// it with the job's fingerprint ("" when none was journaled).
func replaySteps(lines [][]byte, p batchapi.Policy) (*batchapi.Tracker, string, error) {
	tr, job := batchapi.NewTracker(p), ""
	for _, l := range lines {
		var js jobStep
		if json.Unmarshal(l, &js) == nil && js.Step == "job" {
			job = js.Job
			continue
		}
		r, err := batchapi.Decode(l)
		if err != nil {
			return nil, "", err
		}
		if err := tr.Apply(r); err != nil {
			return nil, "", err
		}
	}
	return tr, job, nil
}

// journal appends a step line and makes it durable.
func (o *offload) journal(line []byte) error {
	if err := o.j.AppendStep(line); err != nil {
		return &WriteError{err}
	}
	if err := o.j.Sync(); err != nil {
		return &WriteError{err}
	}
	return nil
}

// record journals r, durably, then applies it: the order that makes a
// kill at any instant safe.
func (o *offload) record(r batchapi.Record) error {
	line, err := batchapi.Encode(nil, r)
	if err != nil {
		return err
	}
	if err := o.journal(line); err != nil {
		return err
	}
	if err := o.tr.Apply(r); err != nil {
		return err
	}
	s, _ := o.tr.Shard(r.Shard)
	level := slog.LevelInfo
	switch r.Step {
	case batchapi.StepUploaded, batchapi.StepCreating, batchapi.StepCancel:
		level = slog.LevelDebug // the step after says it
	}
	o.cfg.Logger.Log(context.Background(), level, "shard", "n", s.N, "step", string(r.Step), "batch", s.Batch, "status", string(s.Status),
		"lines", s.Lines, "completed", s.Counts.Completed, "failed", s.Counts.Failed)
	if o.api.OnShard != nil {
		o.api.OnShard(s)
	}
	if s.Phase == batchapi.Finished {
		o.removeFiles(s)
	}
	return nil
}

// prepare makes the shard directory, removes what a killed planner left,
// drops planned shards whose file is lost, and gathers the ids of the
// shards not finished.
func (o *offload) prepare() error {
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return &SetupError{err}
	}
	tmps, _ := filepath.Glob(filepath.Join(o.dir, ".*.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
	for _, s := range o.tr.Shards() {
		if s.Phase == batchapi.Planned {
			if _, err := batchapi.Verify(o.shardPath(s), s.Hash); err != nil {
				o.cfg.Logger.Warn("a planned shard's file is lost; its lines go into new shards", "shard", s.N, "err", err)
				if err := o.record(batchapi.Record{Shard: s.N, Step: batchapi.StepDropped, Note: "file lost before upload"}); err != nil {
					return err
				}
				continue
			}
		}
		if s.Phase != batchapi.Finished {
			if err := o.eachMeta(s, func(m itemMeta) error { o.live[hashOf(m.ID)] = s.N; return nil }); err != nil {
				return &SetupError{err}
			}
		}
	}
	return nil
}

func (h idHashes) add(id string)      { h[hashOf(id)] = struct{}{} }
func (h idHashes) has(id string) bool { _, ok := h[hashOf(id)]; return ok }

// stopped returns why the run must end now: ctx's error, or
// ErrInterrupted after Config.Stop; nil to go on.
func (o *offload) stopped(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-o.cfg.Stop:
		return ErrInterrupted
	default:
		return nil
	}
}

// sleep waits d, or until the run is stopped.
func (o *offload) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-o.cfg.Stop:
		return ErrInterrupted
	}
}

// spend counts the cost of one answer at batch prices: the model's online
// price (the answering model's, else the one asked for) times the factor.
func (o *offload) spend(asked, answered string, u *usage) {
	p, ok := o.cfg.answerPrice(asked, answered, u)
	if !ok {
		return
	}
	bp := batchapi.Price{In: p.In, Out: p.Out}.AtBatch(o.api.PriceFactor)
	o.cfg.Counters.Cost.add(bp.Cost(int64(u.PromptTokens), int64(u.CompletionTokens)))
}
