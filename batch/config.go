package batch

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm"
)

// Config is one run. cmd fills it in from flags, environment and config file.
type Config struct {
	// Input is the JSONL input, read once, streamed. When the run stops
	// while a read is blocked (a silent pipe or terminal), Run ends the
	// read: with a read deadline when Input has one that works (a pipe or
	// terminal *os.File is reopened for that on Linux), or else by closing
	// Input when it is an io.Closer other than an *os.File. The caller
	// still closes it after Run.
	Input      io.Reader
	InputPath  string // the input's path, "" or "-" for stdin; used to refuse writing over it
	Output     string // the results file; required
	Errors     string // the errors file; default: Output without .jsonl, plus .errors.jsonl
	Checkpoint string // the journal; default Output + ".ckpt"

	Client      *llm.Client // sends the requests; required
	Concurrency int         // requests in flight at most; default 4

	Model       string   // default model for records without one
	System      string   // default system prompt
	Template    string   // Go text/template over the record's fields, making the prompt
	MaxTokens   *int     // max_tokens for records that do not set it
	Temperature *float64 // temperature for records that do not set it
	Fallbacks   []string // models tried in order for an item whose attempts failed on 5xx, no answer or an unknown model

	Count func(string) int // counts a text's tokens for every estimate of an item, made once as it is read (the token limit, the merge caps, the dry run); nil: llm.EstimateTokens

	Merge    bool         // pack small items into merged requests (DESIGN §4)
	Packer   PackerConfig // the caps of merged requests
	JSONMode bool         // ask for response_format json_object in merged requests

	Price   func(model string) (Price, bool) // what a model costs; nil: costs are not counted
	MaxCost float64                          // stop the run (a StopError) once answers cost this many dollars; 0: no budget

	// RunSettings are how the run was made (provider, endpoint, limits...),
	// recorded in a new checkpoint for `llmbatch status` and never compared:
	// see checkpoint.RunPrefix. They must not hold a secret.
	RunSettings map[string]string

	RetryFailed  bool          // redo items recorded as failed
	MaxLineBytes int           // longest input line accepted; default 64 MiB
	SyncEvery    time.Duration // how often results are made durable; default 200ms

	// Stop, when closed, makes the run stop taking new work: requests in
	// flight finish and are recorded, then Run returns ErrInterrupted.
	// Cancelling Run's context instead abandons requests in flight (answers
	// already in hand are still written). nil: only ctx stops the run.
	Stop <-chan struct{}

	Counters *Counters    // live figures for progress display; Run allocates one if nil
	Logger   *slog.Logger // default discards
}

func (c *Config) setDefaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Errors == "" {
		c.Errors = ErrorsPath(c.Output)
	}
	if c.Checkpoint == "" {
		c.Checkpoint = CheckpointPath(c.Output)
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = 64 << 20
	}
	if c.SyncEvery <= 0 {
		c.SyncEvery = 200 * time.Millisecond
	}
	if c.Counters == nil {
		c.Counters = &Counters{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ErrorsPath returns the errors file that goes with the results file out:
// "res.jsonl" gives "res.errors.jsonl".
func ErrorsPath(out string) string {
	return strings.TrimSuffix(out, ".jsonl") + ".errors.jsonl"
}

// CheckpointPath returns the default checkpoint of a results file.
func CheckpointPath(out string) string { return out + ".ckpt" }

// DefaultOutput returns the results file for an input file:
// "in.jsonl" gives "in.out.jsonl".
func DefaultOutput(input string) string {
	return strings.TrimSuffix(input, ".jsonl") + ".out.jsonl"
}

// settings are the answer-shaping settings recorded in the checkpoint (a
// rerun with other values would mix answers of two different jobs), and the
// run settings beside them.
func (c *Config) settings() map[string]string {
	s := map[string]string{"model": c.Model, "system": c.System, "template": c.Template}
	s["max_tokens"], s["temperature"] = "", ""
	if c.MaxTokens != nil {
		s["max_tokens"] = strconv.Itoa(*c.MaxTokens)
	}
	if c.Temperature != nil {
		s["temperature"] = strconv.FormatFloat(*c.Temperature, 'g', -1, 64)
	}
	for k, v := range c.RunSettings {
		s[checkpoint.RunPrefix+k] = v
	}
	return s
}

// newShaper makes the reader's record shaper from cfg, parsing the template
// once.
func newShaper(cfg *Config) (*recordShaper, error) {
	s := &recordShaper{model: cfg.Model, system: cfg.System, maxTokens: cfg.MaxTokens, temperature: cfg.Temperature,
		count: cfg.Count}
	if cfg.Template != "" {
		t, err := template.New("prompt").Option("missingkey=error").Parse(cfg.Template)
		if err != nil {
			return nil, setupErr("template: %v", err)
		}
		s.tmpl = t
	}
	return s, nil
}
