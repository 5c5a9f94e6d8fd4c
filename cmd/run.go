package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
)

// RunOptions is everything `llmbatch run` needs; flags fill it in, tests
// build it directly. It holds the merged configuration (see mergeRun):
// runRun reads nothing else.
type RunOptions struct {
	IO     *IOStreams
	Getenv func(string) string // os.Getenv in production
	Stop   <-chan struct{}     // closed on the first interrupt: stop gracefully

	Input      string
	Output     string // default: Input with .jsonl replaced by .out.jsonl
	Checkpoint string

	ConfigPath   string // the TOML file given with -c
	Profile      string // its [profiles.NAME] table given with --profile
	TemplateFile string // the file --template was read from

	// RunSettings are the non-secret flags the run was given (on the command
	// line, in the environment or the config file), recorded in the journal
	// so that `llmbatch status` prints the command that resumes the job.
	RunSettings map[string]string

	Provider  string
	BaseURL   string
	Model     string
	APIKeyEnv string
	MockOpts  string // options of the built-in mock, e.g. "latency=50ms,rpm=600"

	Concurrency    int
	RPM, TPM       int
	MaxAttempts    int
	BaseDelay      time.Duration
	MaxDelay       time.Duration
	Timeout        time.Duration
	ConnectTimeout time.Duration

	System      string
	Template    string
	MaxTokens   *int
	Temperature *float64

	Adapt      bool          // learn the server's limits from 429s and rate-limit headers
	BreakAfter time.Duration // stop when every attempt has failed for this long
	Redis      string        // redis:// URL whose server shares the key's limits with other processes; "" for none
	SharedConc int           // requests in flight at most across the processes sharing through Redis; 0: no cap

	Fallbacks   []string // models tried in order when an item's attempts fail on 5xx or an unknown model
	Prices      []string // MODEL=IN/OUT dollars per million tokens, over the built-in list prices
	MaxCost     float64  // stop (exit 3, resumable) once answers cost this many dollars
	Merge       bool     // pack small items into merged requests
	BatchItems  int      // items per merged request at most
	BatchTokens int      // estimated prompt tokens per merged request at most
	JSONMode    bool     // ask for JSON mode in merged requests
	DryRun      bool     // send nothing: report what a run would send

	RetryFailed bool
	Report      string        // write the run summary as JSON here
	MetricsFile string        // write the run summary in the Prometheus text format here
	Progress    string        // auto, on, off
	LogEvery    time.Duration // progress log line period when not drawing a bar
	LogFormat   string        // text, json
	Verbose     bool
	Quiet       bool

	BatchAPI BatchAPIOptions // --batch-api and its flags
}

// runLong and runExample are the help of `llmbatch run`.
const (
	runLong = `Run sends every record of INPUT to the chat completions API and writes one
result line per item to OUTPUT, in completion order. Failed items and
rejected input lines go to OUTPUT's .errors.jsonl file.

Interrupt it at any time (Ctrl-C, kill, crash) and run the same command
again: items whose result is on disk are not sent again.

The API key is read from the environment, never from a flag:
--api-key-env NAME, else LLMBATCH_API_KEY, else the provider's usual variable.`
	runExample = `  # try it with no key: the built-in mock provider
  llmbatch run --provider mock testdata/tickets.jsonl

  # DeepSeek, 16 requests in flight, at most 500 requests a minute
  export DEEPSEEK_API_KEY=...
  llmbatch run --provider deepseek -j 16 --rpm 500 -o labels.jsonl tickets.jsonl

  # any OpenAI-compatible server, prompts from stdin
  producer | llmbatch run --base-url http://gpu-box:8000/v1 --model qwen2.5 -o out.jsonl -`
)

// NewCmdRun returns `llmbatch run`. runF replaces the run itself in tests
// of the flags; it gets the options merged (see mergeRun).
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO, Getenv: f.Getenv, Stop: f.Stop}
	var raw rawFlags
	c := &cobra.Command{
		Use:     "run [flags] INPUT",
		Short:   "Run every prompt of a JSONL file (or - for stdin)",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Input = args[0]
			if err := mergeRun(c, opts, &raw); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), opts)
		},
	}
	c.Flags().SortFlags = false // help lists them in the order below
	addEndpointFlags(c.Flags(), opts)
	addJobFlags(c.Flags(), opts, &raw)
	addBatchAPIFlags(c.Flags(), &opts.BatchAPI)
	return c
}

// addEndpointFlags defines the flags that say where requests go and how fast.
func addEndpointFlags(fl *pflag.FlagSet, opts *RunOptions) {
	fl.StringVarP(&opts.ConfigPath, "config", "c", "", "TOML config file (default ./llmbatch.toml if present); keys are these flags' names")
	fl.StringVar(&opts.Profile, "profile", "", "use the config file's [profiles.NAME] table over its top level")
	fl.StringVarP(&opts.Output, "output", "o", "", "results JSONL (default: INPUT with .jsonl replaced by .out.jsonl; required for stdin)")
	fl.StringVar(&opts.Provider, "provider", "", "preset: "+strings.Join(presetNames(), ", "))
	fl.StringVar(&opts.BaseURL, "base-url", "", "OpenAI-compatible base URL, e.g. https://api.deepseek.com/v1")
	fl.StringVar(&opts.Model, "model", "", "model id (records may name their own)")
	fl.StringSliceVar(&opts.Fallbacks, "fallback-models", nil, "models to try in order for an item whose attempts fail on 5xx, no answer, or an unknown model")
	fl.StringVar(&opts.APIKeyEnv, "api-key-env", "", "environment variable holding the API key; several, comma-separated, are rotated")
	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 4, "requests in flight at most")
	fl.IntVar(&opts.RPM, "rpm", 0, "requests per minute per model, paced evenly at it / 1.03 (a run takes at most 1.03x the time it allows), or to what the server's headers say is left of that minute when they show it; 0 for none known")
	fl.IntVar(&opts.TPM, "tpm", 0, "tokens per minute per model as the server counts them (prompts estimated, then scaled to what its answers' usage says; plus max_tokens), paced as --rpm is; 0 for none known")
	fl.BoolVar(&opts.Adapt, "adapt", true, "learn the server's real limits from 429s and its rate-limit headers (--adapt=false to pace exactly at --rpm/--tpm)")
	fl.StringVar(&opts.Redis, "redis", "", "share the key's limits with other llmbatch processes through this Redis: redis://[:password@]host:port/db or rediss://")
	fl.IntVar(&opts.SharedConc, "shared-concurrency", 0, "requests in flight at most across all the processes sharing the key through --redis (expiring leases: a killed process's slots come back); 0 for no cap")
	fl.DurationVar(&opts.BreakAfter, "break-after", 2*time.Minute, "stop (exit 3) when every attempt has failed for this long; 0 never")
	fl.IntVar(&opts.MaxAttempts, "max-attempts", 6, "attempts per request, the first included")
	fl.DurationVar(&opts.BaseDelay, "base-delay", time.Second, "backoff base: retry n waits random(0, min(max-delay, base-delay·2^(n-1)))")
	fl.DurationVar(&opts.MaxDelay, "max-delay", time.Minute, "backoff cap (a server's Retry-After is always honoured in full)")
	fl.DurationVar(&opts.Timeout, "timeout", time.Minute, "one attempt, whole response included (a --provider preset makes it 10-15m)")
	fl.DurationVar(&opts.ConnectTimeout, "connect-timeout", 10*time.Second, "TCP and TLS setup of a connection, apart from --timeout")
}

// addJobFlags defines the flags that shape the prompts, the answers and
// what the run writes and says.
func addJobFlags(fl *pflag.FlagSet, opts *RunOptions, raw *rawFlags) {
	fl.StringVar(&opts.System, "system", "", "system prompt for records without one")
	fl.StringVar(&opts.Template, "template", "", "Go text/template over the record's fields making the prompt, e.g. 'Classify: {{.text}}'")
	fl.StringVar(&opts.TemplateFile, "template-file", "", "read the --template from a file")
	fl.IntVar(&raw.maxTokens, "max-tokens", 0, "max_tokens passed to the API")
	fl.Float64Var(&raw.temperature, "temperature", 0, "temperature passed to the API")
	fl.BoolVar(&opts.Merge, "merge", false, "pack small items into merged requests (one answer per item is still checked by id)")
	fl.IntVar(&opts.BatchItems, "batch-items", 20, "items per merged request at most")
	fl.IntVar(&opts.BatchTokens, "batch-tokens", 8000, "prompt tokens per merged request at most (counted with a tokenizer, 10% margin)")
	fl.BoolVar(&opts.JSONMode, "json-mode", true, "ask for response_format json_object in merged requests (turned off by itself if the server refuses it)")
	fl.StringSliceVar(&opts.Prices, "price", nil, "MODEL=IN/OUT: dollars per million input/output tokens, for the cost in the summary, --dry-run and --max-cost (list prices of common models are built in)")
	fl.Float64Var(&opts.MaxCost, "max-cost", 0, "stop (exit 3, resumable) once this run's answers have cost this many dollars; 0 for no budget")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "send nothing: print the items, requests and tokens a run would send, and the least time the limits allow")
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "journal of finished ids (default OUTPUT.ckpt)")
	fl.BoolVar(&opts.RetryFailed, "retry-failed", false, "also redo items recorded as failed")
	fl.StringVar(&opts.Report, "report", "", "write the run summary as JSON to this file")
	fl.StringVar(&opts.MetricsFile, "metrics-file", "", "write the run summary in the Prometheus text format (for node_exporter's textfile collector)")
	fl.StringVar(&opts.Progress, "progress", "auto", "auto, on or off: a bar on a terminal, a log line every 10s otherwise")
	fl.StringVar(&opts.LogFormat, "log-format", "text", "text or json")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "debug logging (every retry decision)")
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "warnings and errors only, no progress")
	fl.StringVar(&opts.MockOpts, "mock", "", "options of --provider mock, e.g. 'latency=50ms,rpm=600,fail=0.05'")
	fl.DurationVar(&opts.LogEvery, "progress-every", 10*time.Second, "period of progress log lines")
	_ = fl.MarkHidden("progress-every")
}

// runRun wires a run from the merged options and runs it: the input, the
// endpoint, the configs (buildConfigs), then the limiter, client and pipeline.
func runRun(ctx context.Context, opts *RunOptions) error {
	if opts.Getenv("GOGC") == "" {
		// The long-lived data of a run (the set of ids seen) holds no
		// pointers, so collecting more often costs little and keeps the
		// peak memory of a million-item run well under 100 MB.
		debug.SetGCPercent(50)
	}
	log, err := newLogger(opts)
	if err != nil {
		return err
	}
	if err := validate(opts); err != nil {
		return err
	}
	in, closeIn, err := openInput(opts)
	if err != nil {
		return err
	}
	defer closeIn()
	ep, closeEP, err := resolveEndpoint(opts, log)
	if err != nil {
		return err
	}
	defer closeEP()
	rc, err := buildConfigs(opts, in, ep, log)
	if err != nil {
		return err
	}
	if opts.DryRun {
		return dryRun(ctx, opts, rc.batch, rc.prices)
	}
	if opts.BatchAPI.On {
		return runBatchAPI(ctx, opts, rc, log)
	}
	return runBatch(ctx, opts, rc, log)
}

// runBatch makes the limiter and client from rc, runs the pipeline with a
// progress display, and reports.
func runBatch(ctx context.Context, opts *RunOptions, rc *runConfigs, log *slog.Logger) error {
	closeShared, err := shareLimits(ctx, opts, rc, log)
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
	stopProgress := startProgress(ctx, opts, cfg.Counters, client.Stats)
	sum, err := batch.Run(ctx, cfg)
	stopProgress()
	cs := client.Stats()
	if sum != nil && !opts.Quiet {
		printSummary(opts.IO.ErrOut, sum, cs)
		printShared(opts)
	}
	if err == nil && !sum.Complete() {
		err = errSomeFailed
		if opts.Quiet { // -q keeps warnings: say so in one line
			fmt.Fprintf(opts.IO.ErrOut, "llmbatch: %d items without a result; see %s\n",
				sum.Failed+sum.SkippedFailed+sum.Bad, sum.Errors)
		}
	}
	if rerr := writeReport(opts, newReport(opts, started, sum, err, cs, lim)); rerr != nil {
		log.Error("cannot write the report", "err", rerr)
	}
	return err
}

// tokenCounter counts tokens with the model's tokenizer plus a 10% margin
// (providers' own tokenizers differ); nil, for batch's estimate from
// characters, when there is no tokenizer.
func tokenCounter(model string, log *slog.Logger) func(string) int {
	tk, err := llm.NewTokenizer(llm.EncodingFor(model))
	if err == nil {
		err = tk.Load()
	}
	if err != nil {
		log.Warn("no tokenizer; estimating tokens from characters", "err", err)
		return nil
	}
	return func(s string) int { return tk.Count(s) * 11 / 10 }
}

func validate(opts *RunOptions) error {
	switch {
	case opts.Concurrency < 1:
		return usageErr("--concurrency must be at least 1")
	case opts.RPM < 0 || opts.TPM < 0:
		return usageErr("--rpm and --tpm must be 0 (no limit) or more")
	case opts.MaxAttempts < 1:
		return usageErr("--max-attempts must be at least 1")
	case opts.Timeout <= 0 || opts.ConnectTimeout <= 0:
		return usageErr("--timeout and --connect-timeout must be positive")
	case opts.BaseDelay < 0 || opts.MaxDelay < 0:
		return usageErr("--base-delay and --max-delay must not be negative")
	case opts.MaxTokens != nil && *opts.MaxTokens < 1:
		return usageErr("--max-tokens must be at least 1")
	case opts.MaxCost < 0:
		return usageErr("--max-cost must not be negative")
	case opts.BatchItems < 1 || opts.BatchTokens < 1:
		return usageErr("--batch-items and --batch-tokens must be at least 1")
	case opts.SharedConc < 0:
		return usageErr("--shared-concurrency must be 0 (no cap) or more")
	case opts.SharedConc > 0 && opts.Redis == "":
		return usageErr("--shared-concurrency caps the requests in flight of the processes sharing through Redis: give --redis too")
	case opts.Progress != "auto" && opts.Progress != "on" && opts.Progress != "off":
		return usageErr("--progress must be auto, on or off, not %q", opts.Progress)
	}
	if opts.Output == "" { // mergeRun gives every input file a default
		return usageErr("reading stdin: give the results file with -o")
	}
	return nil
}

func openInput(opts *RunOptions) (io.Reader, func(), error) {
	if opts.Input == "-" {
		return opts.IO.In, func() {}, nil
	}
	f, err := os.Open(opts.Input)
	if err != nil {
		return nil, nil, usageErr("input: %v", unwrapPath(err))
	}
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		f.Close()
		return nil, nil, usageErr("input: %s is a directory, not a JSONL file", opts.Input)
	}
	return f, func() { f.Close() }, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

func newLogger(opts *RunOptions) (*slog.Logger, error) {
	level := slog.LevelInfo
	if opts.Verbose {
		level = slog.LevelDebug
	}
	if opts.Quiet {
		level = slog.LevelWarn
	}
	ho := &slog.HandlerOptions{Level: level}
	switch opts.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(opts.IO.ErrOut, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(opts.IO.ErrOut, ho)), nil
	}
	return nil, usageErr("--log-format must be text or json, not %q", opts.LogFormat)
}
