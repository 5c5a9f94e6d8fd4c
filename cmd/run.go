package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// RunOptions is everything `llmbatch run` needs; flags fill it in, tests
// build it directly.
type RunOptions struct {
	IO     *IOStreams
	Getenv func(string) string // os.Getenv in production
	Stop   <-chan struct{}     // closed on the first interrupt: stop gracefully

	Input      string
	Output     string
	Checkpoint string

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
}

// NewCmdRun returns `llmbatch run`. runF replaces the run itself in tests
// of the flags.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO, Getenv: f.Getenv, Stop: f.Stop}
	var maxTokens int
	var temperature float64
	var configPath, profile, templateFile string
	c := &cobra.Command{
		Use:   "run [flags] INPUT",
		Short: "Run every prompt of a JSONL file (or - for stdin)",
		Long: `Run sends every record of INPUT to the chat completions API and writes one
result line per item to OUTPUT, in completion order. Failed items and
rejected input lines go to OUTPUT's .errors.jsonl file.

Interrupt it at any time (Ctrl-C, kill, crash) and run the same command
again: items whose result is on disk are not sent again.

The API key is read from the environment, never from a flag:
--api-key-env NAME, else LLMBATCH_API_KEY, else the provider's usual variable.`,
		Example: `  # try it with no key: the built-in mock provider
  llmbatch run --provider mock testdata/tickets.jsonl

  # DeepSeek, 16 requests in flight, at most 500 requests a minute
  export DEEPSEEK_API_KEY=...
  llmbatch run --provider deepseek -j 16 --rpm 500 -o labels.jsonl tickets.jsonl

  # any OpenAI-compatible server, prompts from stdin
  producer | llmbatch run --base-url http://gpu-box:8000/v1 --model qwen2.5 -o out.jsonl -`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Input = args[0]
			if err := applyConfig(c, opts.Getenv, configPath, profile); err != nil {
				return err
			}
			if p := presets[opts.Provider]; p.Timeout > 0 && !c.Flags().Changed("timeout") {
				opts.Timeout = p.Timeout
			}
			if templateFile != "" {
				if opts.Template != "" && c.Flags().Changed("template") {
					return usageErr("give --template or --template-file, not both")
				}
				b, err := os.ReadFile(templateFile)
				if err != nil {
					return usageErr("--template-file: %v", unwrapPath(err))
				}
				opts.Template = string(b)
			}
			if c.Flags().Changed("max-tokens") {
				opts.MaxTokens = &maxTokens
			}
			if c.Flags().Changed("temperature") {
				opts.Temperature = &temperature
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.SortFlags = false
	fl.StringVarP(&configPath, "config", "c", "", "TOML config file (default ./llmbatch.toml if present); keys are these flags' names")
	fl.StringVar(&profile, "profile", "", "use the config file's [profiles.NAME] table over its top level")
	fl.StringVarP(&opts.Output, "output", "o", "", "results JSONL (default: INPUT with .jsonl replaced by .out.jsonl; required for stdin)")
	fl.StringVar(&opts.Provider, "provider", "", "preset: "+strings.Join(presetNames(), ", "))
	fl.StringVar(&opts.BaseURL, "base-url", "", "OpenAI-compatible base URL, e.g. https://api.deepseek.com/v1")
	fl.StringVar(&opts.Model, "model", "", "model id (records may name their own)")
	fl.StringSliceVar(&opts.Fallbacks, "fallback-models", nil, "models to try in order for an item whose attempts fail on 5xx, no answer, or an unknown model")
	fl.StringVar(&opts.APIKeyEnv, "api-key-env", "", "environment variable holding the API key; several, comma-separated, are rotated")
	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 4, "requests in flight at most")
	fl.IntVar(&opts.RPM, "rpm", 0, "requests per minute per model, paced evenly 3% under it; 0 for none known")
	fl.IntVar(&opts.TPM, "tpm", 0, "tokens per minute per model (estimated prompt tokens plus max_tokens); 0 for none known")
	fl.BoolVar(&opts.Adapt, "adapt", true, "learn the server's real limits from 429s and x-ratelimit headers (--adapt=false to pace exactly at --rpm/--tpm)")
	fl.DurationVar(&opts.BreakAfter, "break-after", 2*time.Minute, "stop (exit 3) when every attempt has failed for this long; 0 never")
	fl.IntVar(&opts.MaxAttempts, "max-attempts", 6, "attempts per request, the first included")
	fl.DurationVar(&opts.BaseDelay, "base-delay", time.Second, "backoff base: retry n waits random(0, min(max-delay, base-delay·2^(n-1)))")
	fl.DurationVar(&opts.MaxDelay, "max-delay", time.Minute, "backoff cap (a server's Retry-After is always honoured in full)")
	fl.DurationVar(&opts.Timeout, "timeout", time.Minute, "one attempt, whole response included (a --provider preset makes it 10-15m)")
	fl.DurationVar(&opts.ConnectTimeout, "connect-timeout", 10*time.Second, "TCP and TLS setup of a connection, apart from --timeout")
	fl.StringVar(&opts.System, "system", "", "system prompt for records without one")
	fl.StringVar(&opts.Template, "template", "", "Go text/template over the record's fields making the prompt, e.g. 'Classify: {{.text}}'")
	fl.StringVar(&templateFile, "template-file", "", "read the --template from a file")
	fl.IntVar(&maxTokens, "max-tokens", 0, "max_tokens passed to the API")
	fl.Float64Var(&temperature, "temperature", 0, "temperature passed to the API")
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
	return c
}

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
	cfg := batch.Config{
		Input: in, InputPath: opts.Input, Output: opts.Output, Checkpoint: opts.Checkpoint,
		Concurrency: opts.Concurrency, Model: opts.Model, System: opts.System, Template: opts.Template,
		MaxTokens: opts.MaxTokens, Temperature: opts.Temperature, RetryFailed: opts.RetryFailed,
		Merge: opts.Merge, JSONMode: opts.JSONMode, Fallbacks: opts.Fallbacks, Stop: opts.Stop, Logger: log,
	}
	if cfg.Model == "" {
		cfg.Model = presets[opts.Provider].Model
	}
	prices, err := newPriceTable(opts.Prices)
	if err != nil {
		return err
	}
	cfg.Price, cfg.MaxCost = prices.lookup, opts.MaxCost
	if opts.MaxCost > 0 {
		if _, ok := prices.lookup(cfg.Model); !ok {
			return usageErr("--max-cost needs the price of %q: give it with --price %s=IN/OUT", cfg.Model, cfg.Model)
		}
	}
	if opts.Merge || opts.DryRun {
		cfg.Packer = packerConfig(opts, cfg.Model, log)
	}
	if opts.DryRun {
		return dryRun(ctx, opts, cfg, prices)
	}
	ep, closeEP, err := resolveEndpoint(opts, log)
	if err != nil {
		return err
	}
	defer closeEP()
	cfg.Limiter = llm.NewLimiterConfig(llm.LimiterConfig{RPM: opts.RPM, TPM: opts.TPM, Concurrency: opts.Concurrency,
		Adapt: opts.Adapt, Margin: 0.03, Logger: log})
	cfg.Client, err = llm.New(llm.Config{
		BaseURL: ep.baseURL, APIKeys: ep.keys, Timeout: opts.Timeout, ConnectTimeout: opts.ConnectTimeout, Concurrency: opts.Concurrency,
		MaxAttempts: opts.MaxAttempts, Backoff: llm.FullJitter(opts.BaseDelay, opts.MaxDelay),
		Limiter: cfg.Limiter, BreakAfter: opts.BreakAfter, UserAgent: "llmbatch/" + Version, Logger: log,
	})
	if err != nil {
		return &UsageError{err}
	}
	cfg.Counters = &batch.Counters{}
	started := time.Now()
	stopProgress := startProgress(ctx, opts, cfg.Counters, cfg.Client.Stats)
	sum, err := batch.Run(ctx, cfg)
	stopProgress()
	cs := cfg.Client.Stats()
	if sum != nil && !opts.Quiet {
		printSummary(opts.IO.ErrOut, sum, cs)
	}
	if err == nil && !sum.Complete() {
		err = errSomeFailed
		if opts.Quiet { // -q keeps warnings: say so in one line
			fmt.Fprintf(opts.IO.ErrOut, "llmbatch: %d items without a result; see %s\n",
				sum.Failed+sum.SkippedFailed+sum.Bad, sum.Errors)
		}
	}
	if rerr := writeReport(opts, newReport(opts, started, sum, err, cs, cfg.Limiter)); rerr != nil {
		log.Error("cannot write the report", "err", rerr)
	}
	return err
}

// packerConfig sets the merged-request caps, counting tokens with the
// model's tokenizer plus a 10% margin (providers' own tokenizers differ).
func packerConfig(opts *RunOptions, model string, log *slog.Logger) batch.PackerConfig {
	pc := batch.PackerConfig{MaxItems: opts.BatchItems, MaxTokens: opts.BatchTokens}
	tk, err := llm.NewTokenizer(llm.EncodingFor(model))
	if err == nil {
		err = tk.Load()
	}
	if err != nil {
		log.Warn("no tokenizer; estimating tokens from characters", "err", err)
		return pc
	}
	pc.Count = func(s string) int { return tk.Count(s) * 11 / 10 }
	return pc
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
	case opts.Progress != "auto" && opts.Progress != "on" && opts.Progress != "off":
		return usageErr("--progress must be auto, on or off, not %q", opts.Progress)
	}
	if opts.Output == "" {
		if opts.Input == "-" {
			return usageErr("reading stdin: give the results file with -o")
		}
		opts.Output = batch.DefaultOutput(opts.Input)
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

// endpoint is where and as whom requests go.
type endpoint struct {
	baseURL string
	keys    []string
}

// resolveEndpoint applies the provider preset, reads the key from the
// environment and, for the mock provider, starts it on loopback.
func resolveEndpoint(opts *RunOptions, log *slog.Logger) (endpoint, func(), error) {
	none := func() {}
	p, ok := presets[opts.Provider]
	if opts.Provider != "" && !ok {
		return endpoint{}, none, usageErr("unknown --provider %q (known: %s)", opts.Provider, strings.Join(presetNames(), ", "))
	}
	ep := endpoint{baseURL: p.BaseURL}
	if opts.BaseURL != "" {
		ep.baseURL = opts.BaseURL
	}
	closeEP := none
	if opts.Provider == "mock" && opts.BaseURL == "" {
		mcfg, err := mock.ParseOptions(opts.MockOpts)
		if err != nil {
			return endpoint{}, none, usageErr("--mock: %v", err)
		}
		srv, err := mock.Start(mcfg)
		if err != nil {
			return endpoint{}, none, err
		}
		ep.baseURL, closeEP = srv.URL, func() { srv.Close() }
	}
	if ep.baseURL == "" {
		return endpoint{}, none, usageErr("no endpoint: give --provider (%s) or --base-url", strings.Join(presetNames(), ", "))
	}
	keys, err := apiKeys(opts, p)
	if err != nil {
		closeEP()
		return endpoint{}, none, err
	}
	ep.keys = keys
	if len(keys) > 0 && plainRemote(ep.baseURL) {
		log.Warn("the API key is sent over plain http to a remote host; use https", "base_url", llm.Redact(ep.baseURL))
	}
	return ep, closeEP, nil
}

// apiKeys reads the key from the first variable set among --api-key-env,
// LLMBATCH_API_KEY and the provider's usual one. The key is never a flag.
//
// --api-key-env A,B,C names several variables: every one must be set, and
// the keys are rotated (a key that gets a 429 rests, one that is refused is
// dropped).
func apiKeys(opts *RunOptions, p preset) ([]string, error) {
	if opts.APIKeyEnv != "" {
		var keys []string
		for _, name := range strings.Split(opts.APIKeyEnv, ",") {
			name = strings.TrimSpace(name)
			k := strings.TrimSpace(opts.Getenv(name))
			if k == "" {
				return nil, usageErr("--api-key-env %s: that environment variable is empty or unset", name)
			}
			keys = append(keys, k)
		}
		return keys, nil
	}
	names := []string{"LLMBATCH_API_KEY"}
	if p.KeyEnv != "" {
		names = append(names, p.KeyEnv)
	}
	for _, n := range names {
		if k := strings.TrimSpace(opts.Getenv(n)); k != "" {
			return []string{k}, nil
		}
	}
	if opts.Provider != "" && !p.NoKey {
		return nil, usageErr("no API key: set %s (or name another variable with --api-key-env)", strings.Join(names, " or "))
	}
	return nil, nil
}

func plainRemote(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
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
