package cmd

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm/mock"
)

func TestNewCmdRunBatchAPI(t *testing.T) {
	for _, tc := range []struct {
		args string
		want BatchAPIOptions
	}{
		{"in.jsonl", BatchAPIOptions{PollEvery: 30 * time.Second, MaxRequests: 50000, MaxBytes: 200 << 20, Fallback: "none", Settle: time.Minute}},
		{"--batch-api --no-wait --poll-every 1m --batch-api-max-requests 7 --batch-api-max-bytes 4096 --batch-api-fallback online in.jsonl",
			BatchAPIOptions{On: true, NoWait: true, PollEvery: time.Minute, MaxRequests: 7, MaxBytes: 4096, Fallback: "online", Settle: time.Minute}},
		{"--provider mock --batch-api in.jsonl", BatchAPIOptions{On: true, PollEvery: 250 * time.Millisecond, MaxRequests: 50000, MaxBytes: 200 << 20, Fallback: "none", Settle: time.Minute}},
	} {
		ios, _, _, _ := Test()
		var got *RunOptions
		c := NewCmdRun(&Factory{IO: ios, Getenv: func(string) string { return "" }}, func(_ context.Context, o *RunOptions) error { got = o; return nil })
		c.SetArgs(strings.Fields(tc.args))
		if err := c.Execute(); err != nil {
			t.Fatalf("Execute(%q) = %v", tc.args, err)
		}
		if got.BatchAPI != tc.want {
			t.Errorf("%q: BatchAPI = %+v, want %+v", tc.args, got.BatchAPI, tc.want)
		}
	}
}

// TestBatchAPIConfigFile: batch_api = true in a profile turns the mode on.
func TestBatchAPIConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "llmbatch.toml")
	os.WriteFile(cfg, []byte("[profiles.nightly]\nbatch_api = true\nno_wait = true\n"), 0o644)
	ios, _, _, _ := Test()
	var got *RunOptions
	c := NewCmdRun(&Factory{IO: ios, Getenv: func(string) string { return "" }}, func(_ context.Context, o *RunOptions) error { got = o; return nil })
	c.SetArgs([]string{"-c", cfg, "--profile", "nightly", "in.jsonl"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.BatchAPI.On || !got.BatchAPI.NoWait {
		t.Errorf("BatchAPI = %+v, want On and NoWait from the profile", got.BatchAPI)
	}
}

// TestRunBatchAPIMock: `run --provider mock --batch-api` runs with no key
// and no network, writes the results and the report's batch figures.
func TestRunBatchAPIMock(t *testing.T) {
	var lines []string
	for i := range 12 {
		lines = append(lines, `{"id":"k`+strconv.Itoa(i)+`","prompt":"p"}`)
	}
	in := writeInput(t, lines...)
	report := filepath.Join(filepath.Dir(in), "report.json")
	code, _, stderr := execute(t, nil, "run", "--provider", "mock", "--mock", "batch_delay=20ms", "--batch-api",
		"--batch-api-max-requests", "5", "--poll-every", "10ms", "--report", report, in)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var r Report
	b, _ := os.ReadFile(report)
	if err := json.Unmarshal(b, &r); err != nil || r.BatchAPI == nil {
		t.Fatalf("report %s: %v", b, err)
	}
	if r.BatchAPI.Batches != 3 || r.BatchAPI.Created != 3 || r.BatchAPI.Lines != 12 || r.Items.Done != 12 {
		t.Errorf("report batch_api %+v, done %d: want 3 batches of 12 lines, 12 done", *r.BatchAPI, r.Items.Done)
	}
	if !strings.Contains(stderr, "3 batches") {
		t.Errorf("summary does not count the batches:\n%s", stderr)
	}
}

// TestBatchAPIRefusedProvider: a provider without a Batch API is a usage
// error, before anything is sent.
func TestBatchAPIRefusedProvider(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"p"}`)
	code, _, stderr := execute(t, map[string]string{"DEEPSEEK_API_KEY": "k"}, "run", "--provider", "deepseek", "--batch-api", in)
	if code != exitUsage || !strings.Contains(stderr, "no Batch API") {
		t.Errorf("exit %d, stderr %q; want 2 saying the provider has no Batch API", code, stderr)
	}
}

// TestNoWaitExits4: --no-wait against a batch still validating exits 4,
// and the summary says the batches are at the provider.
func TestNoWaitExits4(t *testing.T) {
	h := mock.New(mock.Config{Batch: mock.BatchConfig{Delay: time.Hour}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	in := writeInput(t, `{"id":"a","prompt":"p"}`, `{"id":"b","prompt":"q"}`)
	code, _, stderr := execute(t, nil, "run", "--base-url", srv.URL+"/v1", "--model", "m", "--batch-api", "--no-wait", in)
	if code != exitQueued || !strings.Contains(stderr, "1 at the provider") {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitQueued, stderr)
	}
	if codeOf(&batch.QueuedError{Shards: 1}) != 4 {
		t.Error("codeOf(*QueuedError) != 4")
	}
}

// TestDryRunBatchAPI: the dry run prints the shards and the cost at half
// the online price.
func TestDryRunBatchAPI(t *testing.T) {
	var lines []string
	for i := range 7 {
		lines = append(lines, `{"id":"k`+strconv.Itoa(i)+`","prompt":"`+strings.Repeat("word ", 100)+`"}`)
	}
	in := writeInput(t, lines...)
	args := []string{"run", "--dry-run", "--provider", "openai", "--model", "gpt-4o", "--batch-api", "--batch-api-max-requests", "3", in}
	code, out, stderr := execute(t, nil, args...)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(out, "7 items in 3 batches") || !strings.Contains(out, "shard 3") || !strings.Contains(out, "at batch prices (50%") {
		t.Errorf("dry run output:\n%s", out)
	}
	_, online, _ := execute(t, nil, "run", "--dry-run", "--provider", "openai", "--model", "gpt-4o", in)
	if on, b := cost(t, online), cost(t, out); b <= 0 || math.Abs(on-2*b) > 2.5e-6 { // printed to 6 decimals, each rounded
		t.Errorf("online prompt cost %v, batch %v: want half", on, b)
	}
}

// cost returns the prompts' dollars of a dry run's cost line.
func cost(t *testing.T, out string) float64 {
	t.Helper()
	i := strings.Index(out, "cost:")
	if i < 0 {
		t.Fatalf("no cost line in:\n%s", out)
	}
	f := strings.Fields(out[i:])
	v, err := strconv.ParseFloat(strings.TrimPrefix(f[1], "~$"), 64)
	if err != nil {
		t.Fatalf("cost line %q: %v", f[1], err)
	}
	return v
}
