package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/internal/jsonl"
	"github.com/llmbatch/llmbatch/internal/textclip"
)

// StatusOptions is everything `llmbatch status` needs; flags fill it in,
// tests build it directly.
type StatusOptions struct {
	IO         *IOStreams
	Output     string // the results file, as given to run -o
	Checkpoint string // the journal; default Output + ".ckpt"
	Input      string // the input file; default Output with .out.jsonl replaced by .jsonl, if it exists
	JSON       bool   // print a JobStatus object instead of text
}

// JobStatus is what `llmbatch status --json` prints, as one JSON object.
// Counts are of distinct items (or input lines, for invalid). They reconcile
// the checkpoint with the results and errors files as the next run will:
// a line written just before a crash, and not yet in the checkpoint, counts.
type JobStatus struct {
	Output     string  `json:"output"`      // the results file
	Errors     string  `json:"errors_file"` // failed items and rejected input lines
	Checkpoint string  `json:"checkpoint"`  // the journal of finished ids
	Input      *string `json:"input"`       // the input file; null when not given and not found

	// State is "running" (a run holds the checkpoint: the figures are a
	// snapshot), "complete" (every record has a result), "failed" (nothing
	// left to send but some items failed or lines were rejected),
	// "incomplete" (records left to send) or "unknown" (input unknown).
	State    string            `json:"state"`
	Running  bool              `json:"running"`  // a run holds the checkpoint's lock right now
	Settings map[string]string `json:"settings"` // the answer-shaping settings the job runs with (empty ones left out)

	// Run is the run settings recorded when the job started: flag name →
	// value, for every flag the first run was given (by flag, environment
	// or config file) but the output, checkpoint and answer-shaping ones,
	// plus "input". Secrets are never in it (masked as xxxxx). It is {} for
	// a job started by an llmbatch that did not record them.
	Run map[string]string `json:"run"`

	Done           int64            `json:"done"`            // items with a result in the results file
	CheckpointDone int64            `json:"checkpoint_done"` // items the checkpoint records as done
	ResultLines    int64            `json:"result_lines"`    // complete lines in the results file
	Failed         int64            `json:"failed"`          // items that failed and have no result
	Invalid        int64            `json:"invalid"`         // rejected input lines
	ByKind         map[string]int64 `json:"by_kind"`         // errors-file kind → failed items, plus "invalid_input" → invalid; sums to failed+invalid
	Records        *int64           `json:"input_records"`   // non-blank input lines; null when the input is unknown
	Left           *int64           `json:"left"`            // records not yet done, failed or rejected; null when the input is unknown

	// Resume is the run command that goes on with the job, quoted for a
	// POSIX shell; "" when the job is complete. When nothing is left to send
	// it only helps once the rejected lines are fixed in the input. It is
	// the first run's command, rebuilt from Run and Settings; for a job with
	// no Run it names the output, checkpoint and settings but not the
	// provider, endpoint or limits, and INPUT stands for an unknown input.
	Resume      string   `json:"resume"`
	RetryFailed string   `json:"retry_failed"` // Resume with --retry-failed, redoing the failed items; "" when none failed
	Warnings    []string `json:"warnings"`     // what does not add up, also printed on stderr; [] when all is well

	Shards []batchapi.Shard `json:"shards,omitempty"` // a --batch-api job's batches, by number
}

// NewCmdStatus returns `llmbatch status`. runF replaces the command's work
// in tests of the flags.
func NewCmdStatus(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO}
	c := &cobra.Command{
		Use:   "status [flags] OUTPUT",
		Short: "Show what a (possibly interrupted) job has done and what is left",
		Long: `Status reads OUTPUT's checkpoint, results and errors files, without
writing or locking anything, even while a run is writing them, and prints:
items done, items failed by error kind, rejected input lines, how many
input records are left, whether a run is going on now, and the command that
resumes the job.

The input file is the one the job's first run recorded; give another with
--input. For a job started by an llmbatch that did not record it, status
tries OUTPUT with .out.jsonl replaced by .jsonl (run's default OUTPUT).

Exit status: 0, or 2 when OUTPUT has no checkpoint or it cannot be read.`,
		Example: `  llmbatch status tickets.out.jsonl
  llmbatch status --input tickets.jsonl labels.jsonl

  # in a script: records left, or null when the input is unknown
  llmbatch status --json labels.jsonl | jq .left`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Output = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return statusRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Input, "input", "i", "", "the job's input file, to count what is left (default: OUTPUT with .out.jsonl replaced by .jsonl, if it exists)")
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "journal of finished ids, as given to run (default OUTPUT.ckpt)")
	fl.BoolVar(&opts.JSON, "json", false, "print one JSON object for scripts")
	return c
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	st, err := jobStatus(ctx, opts)
	if err != nil {
		return err
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "llmbatch: warning: %s\n", w)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printStatus(opts.IO.Out, st)
	return nil
}

// jobStatus gathers the status of the job writing opts.Output.
func jobStatus(ctx context.Context, opts *StatusOptions) (*JobStatus, error) {
	if opts.Checkpoint == "" {
		opts.Checkpoint = batch.CheckpointPath(opts.Output)
	}
	js, err := batch.Inspect(opts.Output, opts.Checkpoint)
	if err != nil {
		return nil, err
	}
	recorded := checkpoint.Settings(js.Settings)
	input, err := findInput(opts, recorded.Run()[inputKey])
	if err != nil {
		return nil, err
	}
	st := &JobStatus{Output: opts.Output, Errors: batch.ErrorsPath(opts.Output), Checkpoint: opts.Checkpoint,
		Running: js.Running, Settings: recorded.Answer(), Run: recorded.Run(), Done: js.Done, CheckpointDone: js.CheckpointDone,
		ResultLines: js.ResultLines, Failed: js.Failed, Invalid: js.Invalid, ByKind: js.ByKind,
		Warnings: append([]string{}, js.Warnings...)}
	if input != "" {
		n, err := countRecords(ctx, input)
		if err != nil {
			return nil, &batch.SetupError{Err: fmt.Errorf("input: %w", unwrapPath(err))}
		}
		st.Input, st.Records = &input, &n
	}
	if st.Shards, err = batch.LoadShards(opts.Checkpoint); err != nil {
		return nil, err
	}
	st.conclude(opts)
	return st, nil
}

func (st *JobStatus) warn(format string, a ...any) {
	st.Warnings = append(st.Warnings, fmt.Sprintf(format, a...))
}

// conclude works out what is left, the state and the commands to go on.
func (st *JobStatus) conclude(opts *StatusOptions) {
	if st.Records != nil {
		left := *st.Records - st.Done - st.Failed - st.Invalid
		if left < 0 {
			st.warn("%s has %d records but the job has finished %d: is it the input this job ran on?",
				*st.Input, *st.Records, st.Done+st.Failed+st.Invalid)
			left = 0
		}
		st.Left = &left
	}
	switch {
	case st.Running:
		st.State = "running"
	case st.Left == nil:
		st.State = "unknown"
	case *st.Left > 0:
		st.State = "incomplete"
	case st.Failed+st.Invalid > 0:
		st.State = "failed"
	default:
		st.State = "complete"
	}
	if st.State != "complete" {
		st.Resume = shellJoin(st.resumeArgs(opts, false))
	}
	if st.Failed > 0 {
		st.RetryFailed = shellJoin(st.resumeArgs(opts, true))
	}
}

// resumeArgs returns the run command that goes on with the job: the first
// run's recorded flags, and the same output, checkpoint and answer-shaping
// settings (a run with other settings is refused). A job that recorded no
// run settings gets no provider, endpoint or limits.
func (st *JobStatus) resumeArgs(opts *StatusOptions, retry bool) []string {
	args := []string{"llmbatch", "run"}
	if retry {
		args = append(args, "--retry-failed")
	}
	warn := st.warn
	if retry {
		warn = func(string, ...any) {} // warn once
	}
	args = append(args, recordedFlags(st.Run, warn)...)
	runFlags := NewCmdRun(&Factory{IO: opts.IO}, nil).Flags()
	for _, k := range slices.Sorted(maps.Keys(st.Settings)) {
		if k == "template" && st.Run["template-file"] != "" {
			continue // given as the file it was read from
		}
		name := strings.ReplaceAll(k, "_", "-") // max_tokens is --max-tokens
		if runFlags.Lookup(name) == nil {
			if !retry { // warn once
				st.warn("the job's setting %s=%s has no run flag: set it as the first run did", k, shellQuote(textclip.Runes(st.Settings[k], 40)))
			}
			continue
		}
		args = append(args, "--"+name, st.Settings[k])
	}
	if opts.Checkpoint != batch.CheckpointPath(st.Output) {
		args = append(args, "--checkpoint", opts.Checkpoint)
	}
	input := "INPUT"
	if r, ok := st.Run[inputKey]; ok {
		input = r
	}
	if st.Input != nil {
		input = *st.Input
	}
	return append(args, "-o", st.Output, input)
}

// printStatus writes st for people.
func printStatus(w io.Writer, st *JobStatus) {
	line := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-10s"+format+"\n", append([]any{label}, a...)...)
	}
	line("output:", "%s", st.Output)
	if st.Input != nil {
		line("input:", "%s (%d records)", *st.Input, *st.Records)
	} else {
		line("input:", "unknown (give --input to count what is left)")
	}
	if st.Running {
		line("state:", "running: a run holds %s; these figures are a snapshot", st.Checkpoint)
	} else {
		line("state:", "%s", st.State)
	}
	line("done:", "%d (%d result lines)", st.Done, st.ResultLines)
	line("failed:", "%d%s", st.Failed, kinds(st.ByKind))
	line("invalid:", "%d", st.Invalid)
	if st.Left != nil {
		line("left:", "%d", *st.Left)
	} else {
		line("left:", "unknown")
	}
	if len(st.Settings) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(st.Settings)) {
			kv = append(kv, k+"="+shellQuote(textclip.Runes(st.Settings[k], 40)))
		}
		line("settings:", "%s", strings.Join(kv, " "))
	}
	printShards(w, st.Shards)
	printNext(w, st)
}

// printNext writes the commands that go on with the job.
func printNext(w io.Writer, st *JobStatus) {
	how := "" // the command is whole
	if len(st.Run) == 0 {
		how = " with the --provider or --base-url (or --config) you ran it with"
	}
	switch {
	case st.State == "complete":
		return
	case st.Running:
		fmt.Fprintf(w, "\nA run is going on. Should it stop before the end, resume%s:\n  %s\n", how, st.Resume)
	case st.Left == nil || *st.Left > 0:
		fmt.Fprintf(w, "\nResume%s:\n  %s\n", how, st.Resume)
		if st.Failed > 0 {
			fmt.Fprintf(w, "Add --retry-failed to also redo the %s.\n", plural(st.Failed, "failed item"))
		}
	default:
		if st.Failed > 0 {
			fmt.Fprintf(w, "\nRedo the %s%s:\n  %s\n", plural(st.Failed, "failed item"), how, st.RetryFailed)
		}
		if st.Invalid > 0 {
			fmt.Fprintf(w, "\nFix the %s in the input (see %s), then:\n  %s\n", plural(st.Invalid, "rejected line"), st.Errors, st.Resume)
		}
	}
}

// plural returns "1 item" or "2 items".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// kinds formats the failed items' kinds: " (bad_request 2, server_error 1)".
func kinds(byKind map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		if k != batch.KindInvalidInput {
			parts = append(parts, fmt.Sprintf("%s %d", k, byKind[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// countRecords counts the input lines that run reads as records or rejects:
// those holding more than spaces, tabs and carriage returns (and, on line 1,
// a byte order mark). It reads them as run does (internal/jsonl); a line
// over 1 MiB is counted without being held in memory, as no blank line is
// that long.
func countRecords(ctx context.Context, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	lr := jsonl.NewReader(f, 1<<20)
	for i := 0; lr.Next(); i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if lr.TooLong() || len(bytes.Trim(lr.Bytes(), " \t\r")) > 0 {
			n++
		}
	}
	return n, lr.Err()
}
