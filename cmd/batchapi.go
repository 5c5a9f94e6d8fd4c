package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/llm"
)

// BatchAPIOptions are the flags of `llmbatch run --batch-api` (DESIGN §8).
type BatchAPIOptions struct {
	On          bool          // send the job through the provider's Files and Batch API
	NoWait      bool          // submit and collect what is ready, then exit 4 while batches are queued
	PollEvery   time.Duration // first poll period; backs off to 10x, at most 5 min, while nothing changes
	MaxRequests int           // request lines per batch at most
	MaxBytes    int64         // the provider's input file limit; a batch holds 95% of it
	Fallback    string        // online or none: where lines go once their resubmission is spent
	Settle      time.Duration // how long the provider's listing may lag a create (hidden; tests)
}

// addBatchAPIFlags defines the flags of the Batch API mode.
func addBatchAPIFlags(fl *pflag.FlagSet, o *BatchAPIOptions) {
	fl.BoolVar(&o.On, "batch-api", false, "offload the job to the provider's Batch API: half price, results within 24h, same files (see --provider for which have it)")
	fl.BoolVar(&o.NoWait, "no-wait", false, "with --batch-api: submit what is unsubmitted, collect what is finished, exit 4 while batches are queued (run it again, e.g. from cron)")
	fl.DurationVar(&o.PollEvery, "poll-every", batchapi.DefaultPollEvery, "with --batch-api: how often to read a batch's state, backing off to 10x (at most 5m) while nothing changes")
	fl.IntVar(&o.MaxRequests, "batch-api-max-requests", batchapi.DefaultMaxRequests, "with --batch-api: request lines per batch at most")
	fl.Int64Var(&o.MaxBytes, "batch-api-max-bytes", batchapi.DefaultMaxBytes, "with --batch-api: the provider's input file size limit; a batch holds 95% of it")
	fl.StringVar(&o.Fallback, "batch-api-fallback", "none", "with --batch-api: none (report them) or online (send them online) for lines still unanswered after their resubmission")
	fl.DurationVar(&o.Settle, "batch-api-settle", time.Minute, "how long the provider's batch listing may lag a create")
	_ = fl.MarkHidden("batch-api-settle")
}

// config checks the options and returns the batch package's.
func (o *BatchAPIOptions) config(provider string) (batch.BatchAPIConfig, error) {
	c := batch.BatchAPIConfig{NoWait: o.NoWait, PollEvery: o.PollEvery, MaxRequests: o.MaxRequests, MaxBytes: o.MaxBytes, Settle: o.Settle}
	switch o.Fallback {
	case "none":
	case "online":
		c.Fallback = batchapi.FallbackOnline
	default:
		return c, usageErr("--batch-api-fallback must be none or online, not %q", o.Fallback)
	}
	switch {
	case o.PollEvery <= 0:
		return c, usageErr("--poll-every must be positive")
	case o.MaxRequests < 1 || o.MaxBytes < 1024:
		return c, usageErr("--batch-api-max-requests must be at least 1 and --batch-api-max-bytes at least 1024")
	}
	if p, ok := presets[provider]; ok && !p.BatchAPI {
		return c, usageErr("--provider %s has no Batch API (these have: %s); use --base-url for a server that does", provider, batchAPIProviders())
	}
	c.PriceFactor, _ = batchapi.Factor(provider)
	return c, nil
}

// batchAPIProviders lists the presets whose provider has a Batch API.
func batchAPIProviders() string {
	s := ""
	for _, n := range presetNames() {
		if presets[n].BatchAPI {
			if s != "" {
				s += ", "
			}
			s += n
		}
	}
	return s
}

// runBatchAPI runs the job through the Batch API and reports, as runBatch
// does online.
func runBatchAPI(ctx context.Context, opts *RunOptions, rc *runConfigs, log *slog.Logger) error {
	api, err := opts.BatchAPI.config(opts.Provider)
	if err != nil {
		return err
	}
	closeShared, err := shareLimits(ctx, opts, rc, log) // for the requests sent online
	if err != nil {
		return err
	}
	defer closeShared()
	lim := llm.NewLimiterConfig(rc.limiter)
	rc.llm.Limiter = lim
	client, err := llm.New(rc.llm)
	if err != nil {
		return &UsageError{err}
	}
	cfg := rc.batch
	cfg.Client, cfg.Counters = client, &batch.Counters{}
	started := time.Now()
	sum, err := batch.RunBatchAPI(ctx, cfg, api)
	cs := client.Stats()
	if sum != nil && !opts.Quiet {
		printSummary(opts.IO.ErrOut, &sum.Summary, cs)
		printShardSummary(opts.IO.ErrOut, sum)
		printShared(opts)
	}
	if err == nil && !sum.Complete() {
		err = errSomeFailed
	}
	var s *batch.Summary
	if sum != nil {
		s = &sum.Summary
	}
	r := newReport(opts, started, s, err, cs, lim)
	if sum != nil {
		r.BatchAPI = newBatchAPIReport(sum)
	}
	if rerr := writeReport(opts, r); rerr != nil {
		log.Error("cannot write the report", "err", rerr)
	}
	return err
}

// printShardSummary says what became of the shards.
func printShardSummary(w io.Writer, s *batch.APISummary) {
	r := newBatchAPIReport(s)
	fmt.Fprintf(w, "llmbatch: Batch API: %d batches (%d finished, %d at the provider); this run created %d with %d lines (the cost above is at batch prices)\n",
		r.Batches, r.Finished, r.Queued, r.Created, r.Submitted)
}

// BatchAPIReport is the part of --report about the Batch API's shards.
type BatchAPIReport struct {
	Batches   int   `json:"batches"`         // shards planned for the job, all runs
	Finished  int   `json:"finished"`        // shards done with
	Queued    int   `json:"queued"`          // shards with a batch at the provider not yet done
	Created   int   `json:"created"`         // batches created by this run
	Submitted int64 `json:"submitted_lines"` // request lines in them
	Lines     int64 `json:"lines"`           // request lines in every shard
}

func newBatchAPIReport(s *batch.APISummary) *BatchAPIReport {
	r := &BatchAPIReport{Batches: len(s.Shards), Queued: s.Queued, Created: s.Created, Submitted: s.Submitted}
	for _, sh := range s.Shards {
		r.Lines += int64(sh.Lines)
		if sh.Phase == batchapi.Finished {
			r.Finished++
		}
	}
	return r
}

// dryRunBatchAPI prints the shards a --batch-api run would submit, their
// tokens and the cost at batch prices, sending nothing.
func dryRunBatchAPI(ctx context.Context, opts *RunOptions, cfg batch.Config, prices priceTable) error {
	api, err := opts.BatchAPI.config(opts.Provider)
	if err != nil {
		return err
	}
	e, err := batch.EstimateBatchAPI(ctx, cfg, api)
	if err != nil {
		return err
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "items:            %d read (%d bad lines, %d done earlier, %d failed earlier, %d in batches under way)\n",
		e.Items, e.Bad, e.DoneEarlier, e.FailedBefore, e.Live)
	fmt.Fprintf(w, "to submit:        %d items in %d batches (at most %d lines and 95%% of %d bytes each)\n",
		e.ToSend, len(e.Shards), api.MaxRequests, api.MaxBytes)
	for _, p := range e.Shards {
		fmt.Fprintf(w, "  shard %-4d      %6d lines %10d bytes  ~%d prompt tokens\n", p.N, p.Lines, p.Bytes, p.Tokens)
	}
	fmt.Fprintf(w, "tokens:           ~%d (prompts plus max_tokens)\n", e.Tokens)
	fmt.Fprintf(w, "cost:             %s, at batch prices (%.0f%% of the online price)\n",
		estimateCost(&e.Estimate, prices.scaled(api.PriceFactor)), api.PriceFactor*100)
	if len(e.Earlier) > 0 {
		fmt.Fprintf(w, "earlier batches:  %d (see llmbatch status)\n", len(e.Earlier))
	}
	return nil
}
