package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
)

func TestNewCmdRun(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		check func(t *testing.T, o *RunOptions)
	}{
		{"defaults", "in.jsonl", func(t *testing.T, o *RunOptions) {
			if o.Input != "in.jsonl" || o.Concurrency != 4 || o.MaxAttempts != 6 || o.Timeout != time.Minute ||
				o.BaseDelay != time.Second || o.MaxDelay != time.Minute || o.MaxTokens != nil || o.Temperature != nil || o.Progress != "auto" {
				t.Errorf("defaults = %+v", o)
			}
		}},
		{"everything", "-o out.jsonl --provider deepseek --base-url http://x/v1 --model m --api-key-env K -j 9 --rpm 60 --tpm 1000 " +
			"--max-attempts 3 --base-delay 10ms --max-delay 2s --timeout 5s --system sys --template {{.a}} --max-tokens 5 --temperature 0 " +
			"--checkpoint c.ckpt --retry-failed --progress off --log-format json -v in.jsonl", func(t *testing.T, o *RunOptions) {
			if o.Output != "out.jsonl" || o.Provider != "deepseek" || o.BaseURL != "http://x/v1" || o.Model != "m" || o.APIKeyEnv != "K" ||
				o.Concurrency != 9 || o.RPM != 60 || o.TPM != 1000 || o.MaxAttempts != 3 || o.BaseDelay != 10*time.Millisecond ||
				o.MaxDelay != 2*time.Second || o.Timeout != 5*time.Second || o.System != "sys" || o.Template != "{{.a}}" ||
				o.MaxTokens == nil || *o.MaxTokens != 5 || o.Temperature == nil || *o.Temperature != 0 || o.Checkpoint != "c.ckpt" ||
				!o.RetryFailed || o.Progress != "off" || o.LogFormat != "json" || !o.Verbose {
				t.Errorf("options = %+v", o)
			}
		}},
		{"stdin", "-q -", func(t *testing.T, o *RunOptions) {
			if o.Input != "-" || !o.Quiet {
				t.Errorf("options = %+v", o)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			var got *RunOptions
			c := NewCmdRun(&Factory{IO: ios, Getenv: func(string) string { return "" }}, func(_ context.Context, o *RunOptions) error { got = o; return nil })
			c.SetArgs(strings.Fields(tt.args))
			if err := c.Execute(); err != nil {
				t.Fatalf("Execute(%q) error = %v", tt.args, err)
			}
			tt.check(t, got)
		})
	}
}

// execute runs the root command as main would and returns its exit code.
func execute(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := Test()
	root := NewRootCmd(&Factory{IO: ios, Getenv: func(k string) string { return env[k] }})
	root.SetArgs(args)
	c, err := root.ExecuteContextC(t.Context())
	return exitCode(ios, c, err), out.String(), errOut.String()
}

func writeInput(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunMockEndToEnd(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":2,"prompt":"two"}`)
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", in)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	b, err := os.ReadFile(strings.TrimSuffix(in, ".jsonl") + ".out.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ ID, Output string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		got[r.ID] = r.Output
	}
	if got["a"] != "echo: one" || got["2"] != "echo: two" {
		t.Errorf("results = %v", got)
	}
	if !strings.Contains(stderr, "2 done") {
		t.Errorf("summary missing from stderr:\n%s", stderr)
	}
}

func TestRunExitCodes(t *testing.T) {
	good := writeInput(t, `{"id":"a","prompt":"one"}`)
	bad := writeInput(t, `{"id":"a","prompt":"one"}`, `nope`)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want int
		msg  string
	}{
		{"ok", nil, []string{"run", "--provider", "mock", good}, exitOK, ""},
		{"bad line", nil, []string{"run", "--provider", "mock", bad}, exitFailedItems, "bad lines"},
		{"missing input", nil, []string{"run", "--provider", "mock", "/nonexistent/x.jsonl"}, exitUsage, "no such file"},
		{"directory input", nil, []string{"run", "--provider", "mock", t.TempDir()}, exitUsage, "directory"},
		{"stdin without -o", nil, []string{"run", "--provider", "mock", "-"}, exitUsage, "-o"},
		{"unknown provider", nil, []string{"run", "--provider", "nope", good}, exitUsage, "unknown --provider"},
		{"no endpoint", nil, []string{"run", good}, exitUsage, "--base-url"},
		{"no key", nil, []string{"run", "--provider", "openai", good}, exitUsage, "OPENAI_API_KEY"},
		{"empty key env", nil, []string{"run", "--provider", "mock", "--api-key-env", "MY_KEY", good}, exitUsage, "MY_KEY"},
		{"bad flag", nil, []string{"run", "--nope", good}, exitUsage, "unknown flag"},
		{"no args", nil, []string{"run"}, exitUsage, "arg"},
		{"bad concurrency", nil, []string{"run", "--provider", "mock", "-j", "0", good}, exitUsage, "concurrency"},
		{"bad key", nil, []string{"run", "--provider", "mock", "--mock", "key=k", writeInput(t, `{"id":"a","prompt":"x"}`)}, exitStopped, "auth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := execute(t, tt.env, tt.args...)
			if code != tt.want || !strings.Contains(stderr, tt.msg) {
				t.Errorf("llmbatch %s: exit %d, want %d; stderr:\n%s", strings.Join(tt.args, " "), code, tt.want, stderr)
			}
		})
	}
}

func TestRunRejectsMismatchedRerun(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`)
	if code, _, stderr := execute(t, nil, "run", "--provider", "mock", in); code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--system", "be terse", in)
	if code != exitUsage || !strings.Contains(stderr, "system") {
		t.Errorf("rerun with another system prompt: exit %d, want %d naming the setting; stderr:\n%s", code, exitUsage, stderr)
	}
}

func TestProgressLines(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`)
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--mock", "latency=150ms", "-j", "1", "--progress-every", "100ms", in)
	if code != exitOK || !strings.Contains(stderr, "progress: ") || !strings.Contains(stderr, "left") {
		t.Errorf("exit %d; want periodic progress lines on a non-terminal; stderr:\n%s", code, stderr)
	}
}

func TestRunReport(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`, `broken`)
	dir := t.TempDir()
	report, metrics := filepath.Join(dir, "r.json"), filepath.Join(dir, "m.prom")
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--report", report, "--metrics-file", metrics, in)
	if code != exitFailedItems {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailedItems, stderr)
	}
	var r Report
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != exitFailedItems || r.Items.Done != 2 || r.Items.Bad != 1 || r.Items.Read != 3 || r.Requests != 2 ||
		r.Tokens.Prompt == 0 || r.Output == "" || r.WallSecs <= 0 {
		t.Errorf("report = %s", b)
	}
	m, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`llmbatch_items{outcome="done"} 2`, `llmbatch_items{outcome="bad_line"} 1`, "llmbatch_exit_code 1", "# TYPE llmbatch_requests gauge"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, m)
		}
	}
}

// TestDryRunMatchesARealRun checks the dry-run's requests against what a
// real run on the mock sends, with and without merging.
func TestDryRunMatchesARealRun(t *testing.T) {
	var lines []string
	for i := range 45 {
		lines = append(lines, fmt.Sprintf(`{"id":"d%d","prompt":"short text %d"}`, i, i))
	}
	lines = append(lines, `{"id":"conv","messages":[{"role":"user","content":"alone"}]}`, `broken`)
	for _, merge := range []bool{false, true} {
		t.Run(fmt.Sprintf("merge=%v", merge), func(t *testing.T) {
			in := writeInput(t, lines...)
			args := []string{"run", "--provider", "mock", "--batch-items", "10", in}
			if merge {
				args = append([]string{"run", "--merge"}, args[1:]...)
			}
			code, stdout, stderr := execute(t, nil, append(args, "--dry-run")...)
			if code != exitOK {
				t.Fatalf("dry run: exit %d\n%s", code, stderr)
			}
			if _, err := os.Stat(strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"); err == nil {
				t.Error("the dry run wrote a results file")
			}
			want := "46 one per item; 6 merged"
			if !strings.Contains(stdout, want) || !strings.Contains(stdout, "1 bad lines") {
				t.Errorf("dry run says:\n%s\nwant %q and 1 bad line", stdout, want)
			}
			report := filepath.Join(t.TempDir(), "r.json")
			execute(t, nil, append(args, "--report", report)...)
			var r Report
			b, _ := os.ReadFile(report)
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			wantRequests := int64(46)
			if merge {
				wantRequests = 6
			}
			if r.Requests != wantRequests || r.Items.Done != 46 {
				t.Errorf("real run: %d requests for %d items, want %d for 46 as the dry run said", r.Requests, r.Items.Done, wantRequests)
			}
		})
	}
}

func TestQuietStillSaysSomethingFailed(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"x"}`, `not json`)
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "-q", in)
	if code != exitFailedItems || !strings.Contains(stderr, "1 items without a result") {
		t.Errorf("exit %d, stderr %q; want %d and a one-line warning", code, stderr, exitFailedItems)
	}
}

func TestProgressWarnsWhenStuck(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`)
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--mock", "latency=900ms", "--progress-every", "100ms", in)
	if code != exitOK || !strings.Contains(stderr, "warning: nothing has finished for") {
		t.Errorf("exit %d; want a warning that nothing finished; stderr:\n%s", code, stderr)
	}
}

func TestMaxCostStopsAndResumes(t *testing.T) {
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"id":"c%d","prompt":"some words to pay for %d"}`, i, i))
	}
	in := writeInput(t, lines...)
	// A million dollars per million tokens: each answer costs about $10.
	args := []string{"run", "--provider", "mock", "-j", "1", "--price", "mock-1=1000000/1000000", "--max-cost", "50", in}
	code, _, stderr := execute(t, nil, args...)
	if code != exitStopped || !strings.Contains(stderr, "budget") {
		t.Fatalf("exit %d, want %d naming the budget; stderr:\n%s", code, exitStopped, stderr)
	}
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), "\n"); n == 0 || n > 8 {
		t.Errorf("%d items answered before the $50 budget stopped the run, want a few", n)
	}
	code, _, stderr = execute(t, nil, "run", "--provider", "mock", "--price", "mock-1=0/0", in)
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	b, _ = os.ReadFile(out)
	if n := strings.Count(string(b), "\n"); n != 40 {
		t.Errorf("after resuming, %d result lines, want 40", n)
	}
}

func TestCostUnknownIsNotZero(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"x"}`)
	report := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--model", "unpriced", "--report", report, in)
	if code != exitOK || !strings.Contains(stderr, "cost unknown") {
		t.Errorf("exit %d, stderr:\n%s\nwant the cost shown as unknown", code, stderr)
	}
	b, _ := os.ReadFile(report)
	if !strings.Contains(string(b), `"cost_usd": null`) {
		t.Errorf("report: %s\nwant cost_usd null", b)
	}
	if code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--model", "unpriced", "--max-cost", "1", in); code != exitUsage {
		t.Errorf("--max-cost without a price: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
}

func TestCodeOfDoesNotReadAPIMessages(t *testing.T) {
	apiErr := &llm.APIError{Status: 403, Kind: llm.Auth, Message: "This endpoint only accepts requests from allow-listed IPs"}
	for _, err := range []error{&batch.StopError{Err: apiErr}, &batch.WriteError{Err: errors.New("requires at least 1 byte")}} {
		if got := codeOf(err); got != exitStopped {
			t.Errorf("codeOf(%v) = %d, want %d", err, got, exitStopped)
		}
	}
}

func TestBudgetSpentByTheLastItemIsStillSuccess(t *testing.T) {
	in := writeInput(t, `{"id":"only","prompt":"the one item"}`)
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--price", "mock-1=1000000/1000000", "--max-cost", "1", in)
	if code != exitOK {
		t.Errorf("exit %d, want %d: nothing was left to do when the budget ran out\n%s", code, exitOK, stderr)
	}
}

func TestSeveralKeys(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"x"}`)
	env := map[string]string{"KEY_A": "sk-aaaaaaaaaa"}
	code, _, stderr := execute(t, env, "run", "--provider", "mock", "--api-key-env", "KEY_A,KEY_B", in)
	if code != exitUsage || !strings.Contains(stderr, "KEY_B") || strings.Contains(stderr, "sk-aaaa") {
		t.Errorf("a missing second key: exit %d, stderr %q; want %d naming KEY_B and no key", code, stderr, exitUsage)
	}
	env["KEY_B"] = "sk-bbbbbbbbbb"
	if code, _, stderr := execute(t, env, "run", "--provider", "mock", "--api-key-env", "KEY_A,KEY_B", in); code != exitOK {
		t.Errorf("two keys: exit %d\n%s", code, stderr)
	}
}

// TestReportTokenScale checks that a run told a token limit reports the
// scale its pace learned from the answers' usage: the mock counts a token
// per four characters, the tokenizer (and its 10% margin) more for short
// words, so the scale is under 1.
func TestReportTokenScale(t *testing.T) {
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"id":"s%d","prompt":"%d %s"}`, i, i, strings.Repeat("a to of in is it ", 30)))
	}
	in := writeInput(t, lines...)
	report := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--tpm", "6000000", "--report", report, in)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var r Report
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Limits) != 1 || r.Limits[0].TokenScale <= 0.5 || r.Limits[0].TokenScale >= 0.95 {
		t.Errorf("effective limits %+v, want one model's with a token scale between 0.5 and 0.95", r.Limits)
	}
}
