package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
)

// Report is the machine-readable summary written by --report.
type Report struct {
	Version   string  `json:"version"`
	Input     string  `json:"input"`
	Output    string  `json:"output"`
	Errors    string  `json:"errors"`
	ExitCode  int     `json:"exit_code"`
	Error     string  `json:"error,omitempty"`
	Started   string  `json:"started"`
	WallSecs  float64 `json:"wall_seconds"`
	ItemsPerS float64 `json:"items_per_second"`
	Items     struct {
		Read          int64 `json:"read"`
		Done          int64 `json:"done"`
		Failed        int64 `json:"failed"`
		Bad           int64 `json:"bad_lines"`
		Skipped       int64 `json:"skipped_done_earlier"`
		SkippedFailed int64 `json:"skipped_failed_earlier"`
	} `json:"items"`
	Requests        int64            `json:"requests"`
	Retries         int64            `json:"retries"`
	RetriesByStatus map[string]int64 `json:"retries_by_status"`
	RateLimited     int64            `json:"rate_limited"`
	WaitSecs        float64          `json:"wait_seconds"`
	Limits          []EffectiveLimit `json:"effective_limits,omitempty"`
	Cost            *float64         `json:"cost_usd"`                // null when unknown
	CostFloor       bool             `json:"cost_is_floor,omitempty"` // some answers came from models without a price
	Tokens          struct {
		Prompt     int64 `json:"prompt"`
		Completion int64 `json:"completion"`
	} `json:"tokens"`
	BatchAPI *BatchAPIReport `json:"batch_api,omitempty"` // a --batch-api run's shards; its cost is at batch prices
}

// EffectiveLimit is the pacing in force for a model when the run ended.
type EffectiveLimit struct {
	Model string  `json:"model"`
	RPM   float64 `json:"rpm,omitempty"`
	TPM   float64 `json:"tpm,omitempty"`
	// TokenScale is what the pace counted an estimated prompt token as:
	// the server's own count over the estimates (see llm.Stats.TokenScale).
	TokenScale float64 `json:"token_scale,omitempty"`
}

func newReport(opts *RunOptions, started time.Time, s *batch.Summary, runErr error, cs llm.Stats, lim *llm.Limiter) *Report {
	r := &Report{Version: Version, Input: opts.Input, Output: opts.Output, ExitCode: codeOf(runErr),
		Started: started.UTC().Format(time.RFC3339), RetriesByStatus: map[string]int64{}}
	if runErr != nil && r.ExitCode != exitFailedItems {
		r.Error = runErr.Error()
	}
	if s == nil {
		return r
	}
	r.Errors = s.Errors
	r.WallSecs = s.Elapsed.Seconds()
	if r.WallSecs > 0 {
		r.ItemsPerS = float64(s.Done+s.Failed) / r.WallSecs
	}
	r.Items.Read, r.Items.Done, r.Items.Failed, r.Items.Bad = s.Read, s.Done, s.Failed, s.Bad
	r.Items.Skipped, r.Items.SkippedFailed = s.Skipped, s.SkippedFailed
	r.Requests, r.Retries, r.RetriesByStatus, r.RateLimited = cs.Attempts, cs.Retries, cs.RetriesByStatus, cs.RateLimited
	r.WaitSecs = cs.Waited.Seconds()
	for _, m := range lim.Models() {
		rpm, tpm := lim.Effective(m)
		if rpm > 0 || tpm > 0 {
			r.Limits = append(r.Limits, EffectiveLimit{Model: m, RPM: math.Round(rpm), TPM: math.Round(tpm),
				TokenScale: math.Round(cs.TokenScale[m]*1000) / 1000})
		}
	}
	r.Tokens.Prompt, r.Tokens.Completion = s.PromptTokens, s.OutputTokens
	if s.CostUnknown == 0 || s.Cost > 0 {
		cost := s.Cost
		r.Cost, r.CostFloor = &cost, s.CostUnknown > 0
	}
	return r
}

// writeReport writes the report as JSON and/or Prometheus text, each by a
// rename, so a reader never sees half a file.
func writeReport(opts *RunOptions, r *Report) error {
	if opts.Report != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		// The report can quote a server's message, which can quote a
		// prompt: private, like the results.
		if err := writeAtomic(opts.Report, append(b, '\n'), 0o600); err != nil {
			return err
		}
	}
	if opts.MetricsFile != "" {
		// Figures only, read by node_exporter, which may run as another user.
		return writeAtomic(opts.MetricsFile, []byte(r.prometheus()), 0o644)
	}
	return nil
}

// prometheus renders the report in the text format read by node_exporter's
// textfile collector.
func (r *Report) prometheus() string {
	var b strings.Builder
	g := func(name, help string, v any, labels ...string) {
		fmt.Fprintf(&b, "# HELP llmbatch_%s %s\n# TYPE llmbatch_%s gauge\n", name, help, name)
		l := ""
		if len(labels) > 0 {
			l = "{" + strings.Join(labels, ",") + "}"
		}
		fmt.Fprintf(&b, "llmbatch_%s%s %v\n", name, l, v)
	}
	g("exit_code", "Exit code of the last run.", r.ExitCode)
	g("last_run_timestamp_seconds", "When the last run started.", mustUnix(r.Started))
	g("wall_seconds", "Wall time of the last run.", r.WallSecs)
	fmt.Fprintf(&b, "# HELP llmbatch_items Items of the last run by outcome.\n# TYPE llmbatch_items gauge\n")
	for _, kv := range []struct {
		k string
		v int64
	}{{"done", r.Items.Done}, {"failed", r.Items.Failed}, {"bad_line", r.Items.Bad},
		{"skipped_done", r.Items.Skipped}, {"skipped_failed", r.Items.SkippedFailed}} {
		fmt.Fprintf(&b, "llmbatch_items{outcome=%q} %d\n", kv.k, kv.v)
	}
	g("requests", "HTTP attempts of the last run.", r.Requests)
	g("retries", "Retries of the last run.", r.Retries)
	g("rate_limited", "429 answers of the last run.", r.RateLimited)
	g("prompt_tokens", "Prompt tokens of the last run.", r.Tokens.Prompt)
	g("completion_tokens", "Completion tokens of the last run.", r.Tokens.Completion)
	return b.String()
}

func mustUnix(rfc string) int64 {
	t, _ := time.Parse(time.RFC3339, rfc)
	return t.Unix()
}

func writeAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".llmbatch-report-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
