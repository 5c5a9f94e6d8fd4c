package cmd

import (
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
)

// rawFlags are flag values that become options only once the merge knows
// whether they were given: an unset --max-tokens sends no max_tokens at all.
type rawFlags struct {
	maxTokens   int
	temperature float64
}

// mergeRun fills in opts in one order of precedence: flags, then
// LLMBATCH_<NAME> environment variables, then the config file (its profile,
// then its top level), then the provider's preset, then the defaults. It is
// the only place where these sources meet; runRun only reads opts. It also
// records the run's settings for the journal (see runSettings).
func mergeRun(c *cobra.Command, opts *RunOptions, raw *rawFlags) error {
	if err := applyConfig(c, opts.Getenv, opts.ConfigPath, opts.Profile); err != nil {
		return err // flags > env > TOML: every flag set by one of them is now Changed
	}
	fl := c.Flags()
	if err := applyPreset(fl, opts); err != nil {
		return err
	}
	if err := readTemplateFile(fl, opts); err != nil {
		return err
	}
	if fl.Changed("max-tokens") {
		opts.MaxTokens = &raw.maxTokens
	}
	if fl.Changed("temperature") {
		opts.Temperature = &raw.temperature
	}
	if opts.Output == "" && opts.Input != "-" {
		opts.Output = batch.DefaultOutput(opts.Input)
	}
	opts.RunSettings = runSettings(fl, opts.Input)
	return nil
}

// applyPreset fills in what --provider stands for wherever no flag,
// variable or config key gave a value: the base URL, the model and the
// timeout. (The variable holding its key is looked up with the key, in
// apiKeys.)
func applyPreset(fl *pflag.FlagSet, opts *RunOptions) error {
	p, ok := presets[opts.Provider]
	if opts.Provider != "" && !ok {
		return usageErr("unknown --provider %q (known: %s)", opts.Provider, strings.Join(presetNames(), ", "))
	}
	if opts.BaseURL == "" {
		opts.BaseURL = p.BaseURL
	}
	if opts.Model == "" {
		opts.Model = p.Model
	}
	if p.Timeout > 0 && !fl.Changed("timeout") {
		opts.Timeout = p.Timeout
	}
	if p.Concurrency > 0 && !fl.Changed("concurrency") {
		opts.Concurrency = p.Concurrency
	}
	if p.PollEvery > 0 && !fl.Changed("poll-every") {
		opts.BatchAPI.PollEvery = p.PollEvery
	}
	return nil
}

// readTemplateFile sets the template from --template-file.
func readTemplateFile(fl *pflag.FlagSet, opts *RunOptions) error {
	if opts.TemplateFile == "" {
		return nil
	}
	if opts.Template != "" && fl.Changed("template") {
		return usageErr("give --template or --template-file, not both")
	}
	b, err := os.ReadFile(opts.TemplateFile)
	if err != nil {
		return usageErr("--template-file: %v", unwrapPath(err))
	}
	opts.Template = string(b)
	return nil
}

// runConfigs are the three configurations a run is made of, and the price
// table the batch config's Price looks models up in.
type runConfigs struct {
	batch   batch.Config      // the pipeline; Client, Limiter and Counters are set when they are made
	llm     llm.Config        // the client; Limiter is set when it is made
	limiter llm.LimiterConfig // the limiter shared by the client and the pipeline
	prices  priceTable
}

// buildConfigs builds every configuration of a run from the merged options,
// the input and the endpoint (none for a dry run): the one place where
// options become configs.
func buildConfigs(opts *RunOptions, in io.Reader, ep endpoint, log *slog.Logger) (*runConfigs, error) {
	prices, err := newPriceTable(opts.Prices)
	if err != nil {
		return nil, err
	}
	if _, ok := prices.lookup(opts.Model); opts.MaxCost > 0 && !ok {
		return nil, usageErr("--max-cost needs the price of %q: give it with --price %s=IN/OUT", opts.Model, opts.Model)
	}
	rc := &runConfigs{prices: prices, limiter: limiterConfig(opts, log)}
	rc.batch = batch.Config{
		Input: in, InputPath: opts.Input, Output: opts.Output, Checkpoint: opts.Checkpoint,
		Concurrency: opts.Concurrency, Model: opts.Model, System: opts.System, Template: opts.Template,
		MaxTokens: opts.MaxTokens, Temperature: opts.Temperature, Fallbacks: opts.Fallbacks,
		Merge: opts.Merge, JSONMode: opts.JSONMode, Price: prices.lookup, MaxCost: opts.MaxCost,
		RunSettings: opts.RunSettings, RetryFailed: opts.RetryFailed, Stop: opts.Stop, Logger: log,
	}
	if opts.Merge || opts.DryRun {
		rc.batch.Packer = batch.PackerConfig{MaxItems: opts.BatchItems, MaxTokens: opts.BatchTokens}
	}
	// The tokenizer where token counts matter (the merge caps, the token
	// limit), for the run and its dry run alike: the dry run predicts the
	// figures the run paces with.
	if opts.Merge || opts.TPM > 0 {
		rc.batch.Count = tokenCounter(opts.Model, log)
	}
	rc.llm = llm.Config{
		BaseURL: ep.baseURL, APIKeys: ep.keys, Timeout: opts.Timeout, ConnectTimeout: opts.ConnectTimeout,
		Concurrency: opts.Concurrency, MaxAttempts: opts.MaxAttempts, Backoff: llm.FullJitter(opts.BaseDelay, opts.MaxDelay),
		BreakAfter: opts.BreakAfter, UserAgent: "llmbatch/" + Version, Logger: log,
	}
	return rc, nil
}

// limiterConfig is the pacing of a run: the told limits 3% under, learnt
// ones when --adapt.
func limiterConfig(opts *RunOptions, log *slog.Logger) llm.LimiterConfig {
	return llm.LimiterConfig{RPM: opts.RPM, TPM: opts.TPM, Concurrency: opts.Concurrency,
		Adapt: opts.Adapt, Margin: 0.03, Logger: log}
}
