package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/llm"
)

// NewCmdCancel returns `llmbatch cancel`: it takes the flags of run (the
// same command line and config file name the provider and key), and the
// results file of a --batch-api job. runF replaces the cancel in tests.
func NewCmdCancel(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO, Getenv: f.Getenv, Stop: f.Stop}
	var raw rawFlags
	c := &cobra.Command{
		Use:   "cancel [flags] OUTPUT",
		Short: "Cancel a --batch-api job's batches at the provider",
		Long: `Cancel asks the provider to cancel every batch of the --batch-api job that
writes OUTPUT and is not done yet, and records it in the job's checkpoint.
Give it the provider's flags (--provider, --base-url, --api-key-env, -c) as
for run. The lines each batch finished are kept: the next run of the job
collects them and resubmits only what is left.`,
		Example: `  llmbatch cancel --provider openai labels.jsonl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Output = args[0]
			if err := mergeRun(c, opts, &raw); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return cancelRun(c.Context(), opts)
		},
	}
	addEndpointFlags(c.Flags(), opts)
	addJobFlags(c.Flags(), opts, &raw)
	addBatchAPIFlags(c.Flags(), &opts.BatchAPI)
	return c
}

// cancelRun cancels the job's batches and lists its shards.
func cancelRun(ctx context.Context, opts *RunOptions) error {
	log, err := newLogger(opts)
	if err != nil {
		return err
	}
	ep, closeEP, err := resolveEndpoint(opts, log)
	if err != nil {
		return err
	}
	defer closeEP()
	client, err := llm.New(llm.Config{BaseURL: ep.baseURL, APIKeys: ep.keys, Timeout: opts.Timeout,
		ConnectTimeout: opts.ConnectTimeout, MaxAttempts: opts.MaxAttempts, Backoff: llm.FullJitter(opts.BaseDelay, opts.MaxDelay),
		UserAgent: "llmbatch/" + Version, Logger: log})
	if err != nil {
		return &UsageError{err}
	}
	shards, err := batch.CancelBatchAPI(ctx, batch.Config{Output: opts.Output, Checkpoint: opts.Checkpoint, Client: client, Logger: log})
	printShards(opts.IO.Out, shards)
	if err == nil {
		fmt.Fprintln(opts.IO.ErrOut, "llmbatch: cancelled; run the job's command again to collect what the batches finished and resubmit the rest")
	}
	return err
}

// printShards lists a job's Batch API shards, one a line.
func printShards(w io.Writer, shards []batchapi.Shard) {
	if len(shards) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-6s %-5s %-10s %-12s %-30s %7s %9s %7s\n", "shard", "round", "phase", "state", "batch", "lines", "completed", "failed")
	for _, s := range shards {
		state := string(s.Status)
		if s.Cancel {
			state += "*"
		}
		fmt.Fprintf(w, "%-6d %-5d %-10s %-12s %-30s %7d %9d %7d\n", s.N, s.Round, s.Phase, state, s.Batch, s.Lines, s.Counts.Completed, s.Counts.Failed)
	}
}
