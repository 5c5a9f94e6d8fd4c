package cmd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// parseRun runs `llmbatch run` with args and env up to the options.
func parseRun(t *testing.T, env map[string]string, args ...string) (*RunOptions, error) {
	t.Helper()
	ios, _, _, _ := Test()
	var got *RunOptions
	c := NewCmdRun(&Factory{IO: ios, Getenv: func(k string) string { return env[k] }},
		func(_ context.Context, o *RunOptions) error { got = o; return nil })
	c.SetArgs(args)
	c.SetOut(ios.ErrOut)
	c.SetErr(ios.ErrOut)
	err := c.Execute()
	return got, err
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigPrecedence(t *testing.T) {
	cfg := writeConfig(t, `
model = "top"
rpm = 10
tpm = 20
concurrency = 3
max_delay = "5s"

[profiles.fast]
rpm = 100
concurrency = 30
`)
	env := map[string]string{"LLMBATCH_CONCURRENCY": "7"}
	o, err := parseRun(t, env, "-c", cfg, "--profile", "fast", "--tpm", "99", "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// flag > env > profile > top level > default
	if o.TPM != 99 || o.Concurrency != 7 || o.RPM != 100 || o.Model != "top" || o.MaxDelay.String() != "5s" || o.MaxAttempts != 6 {
		t.Errorf("tpm %d (flag 99), concurrency %d (env 7), rpm %d (profile 100), model %q (top), max-delay %v (top 5s), max-attempts %d (default 6)",
			o.TPM, o.Concurrency, o.RPM, o.Model, o.MaxDelay, o.MaxAttempts)
	}
	o, err = parseRun(t, nil, "-c", cfg, "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if o.RPM != 10 || o.Concurrency != 3 {
		t.Errorf("without a profile: rpm %d, concurrency %d; want 10 and 3", o.RPM, o.Concurrency)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, text, profile, want string
	}{
		{"unknown key", "model = \"m\"\n\nconcurency = 3\n", "", "c.toml:3: unknown key concurency"},
		{"bad value", "model = \"m\"\nrpm = \"lots\"\n", "", "c.toml:2: rpm: invalid value"},
		{"bad duration", "timeout = \"soon\"\n", "", "c.toml:1: timeout"},
		{"syntax", "model = \n", "", "c.toml:1"},
		{"key in file", "api_key = \"sk-123\"\n", "", "never put an API key in a file"},
		{"missing profile", "[profiles.a]\nrpm = 1\n", "b", "no [profiles.b]"},
		{"unknown key in profile", "[profiles.a]\nrpn = 1\n", "a", "unknown key profiles.a.rpn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"-c", writeConfig(t, tt.text), "in.jsonl"}
			if tt.profile != "" {
				args = append([]string{"--profile", tt.profile}, args...)
			}
			_, err := parseRun(t, nil, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(tt.text, "sk-123") && err != nil && strings.Contains(err.Error(), "sk-123") {
				t.Errorf("error %q repeats the key", err)
			}
		})
	}
	if _, err := parseRun(t, map[string]string{"LLMBATCH_RPM": "many"}, "in.jsonl"); err == nil || !strings.Contains(err.Error(), "LLMBATCH_RPM") {
		t.Errorf("bad environment value: error = %v, want it to name LLMBATCH_RPM", err)
	}
	if _, err := parseRun(t, nil, "-c", "/nonexistent.toml", "in.jsonl"); err == nil {
		t.Error("a missing --config file must be an error")
	}
}

func TestConfigInitWritesAValidStarter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "llmbatch.toml")
	if code, _, stderr := execute(t, nil, "config", "init", path); code != exitOK {
		t.Fatalf("config init: exit %d\n%s", code, stderr)
	}
	if code, _, _ := execute(t, nil, "config", "init", path); code != exitUsage {
		t.Errorf("config init over an existing file: exit %d, want %d", code, exitUsage)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseRun(t, nil, "-c", path, "in.jsonl"); err != nil {
		t.Errorf("the starter as written: %v", err)
	}
	// Every commented setting must be a valid one once uncommented.
	uncommented := regexp.MustCompile(`(?m)^# ([a-z_]+ = |\[profiles)`).ReplaceAllString(string(b), "$1")
	p := filepath.Join(dir, "all.toml")
	if err := os.WriteFile(p, []byte(uncommented), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseRun(t, nil, "-c", p, "--profile", "deepseek", "in.jsonl")
	if err != nil {
		t.Fatalf("the starter uncommented: %v\n%s", err, uncommented)
	}
	if o.Concurrency != 16 || o.Provider != "deepseek" {
		t.Errorf("profile deepseek: concurrency %d provider %q", o.Concurrency, o.Provider)
	}
}

func TestPresetTimeout(t *testing.T) {
	o, err := parseRun(t, nil, "--provider", "deepseek", "in.jsonl")
	if err != nil || o.Timeout != 15*time.Minute {
		t.Errorf("deepseek preset: timeout %v, %v; want 15m", o.Timeout, err)
	}
	o, err = parseRun(t, nil, "--provider", "deepseek", "--timeout", "30s", "in.jsonl")
	if err != nil || o.Timeout != 30*time.Second {
		t.Errorf("deepseek preset with --timeout 30s: timeout %v, %v", o.Timeout, err)
	}
}

// TestPresetComesAfterFileAndEnv checks the merge's order for what a preset gives: a flag, a variable or a
// config key wins over the preset, which wins over the default.
func TestPresetComesAfterFileAndEnv(t *testing.T) {
	o, err := parseRun(t, nil, "--provider", "deepseek", "in.jsonl")
	if err != nil || o.BaseURL != "https://api.deepseek.com/v1" || o.Model != "deepseek-chat" || o.Timeout != 15*time.Minute {
		t.Errorf("deepseek preset: base URL %q, model %q, timeout %v, %v; want the preset's", o.BaseURL, o.Model, o.Timeout, err)
	}
	cfg := writeConfig(t, "provider = \"deepseek\"\nbase_url = \"http://gpu-box:8000/v1\"\ntimeout = \"90s\"\n")
	o, err = parseRun(t, map[string]string{"LLMBATCH_MODEL": "deepseek-reasoner"}, "-c", cfg, "in.jsonl")
	if err != nil || o.BaseURL != "http://gpu-box:8000/v1" || o.Model != "deepseek-reasoner" || o.Timeout != 90*time.Second {
		t.Errorf("preset under a config file and env: base URL %q, model %q, timeout %v, %v; want the file's, the env's, the file's",
			o.BaseURL, o.Model, o.Timeout, err)
	}
	if o.Output != "in.out.jsonl" {
		t.Errorf("output = %q, want the default in.out.jsonl", o.Output)
	}
	if _, err := parseRun(t, nil, "--provider", "nope", "--dry-run", "in.jsonl"); err == nil || !strings.Contains(err.Error(), "unknown --provider") {
		t.Errorf("an unknown provider, even for a dry run: error = %v, want unknown --provider", err)
	}
}

// TestBuildConfigs checks that the merged options, preset included, reach the three configs of a run.
func TestBuildConfigs(t *testing.T) {
	o, err := parseRun(t, nil, "--provider", "deepseek", "-j", "8", "--rpm", "500", "--tpm", "9000", "--adapt=false",
		"--break-after", "30s", "--max-attempts", "3", "--merge", "--batch-items", "7", "--system", "S", "--max-tokens", "5", "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ep := endpoint{baseURL: o.BaseURL, keys: []string{"k"}}
	rc, err := buildConfigs(o, strings.NewReader(""), ep, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b, l, lim := rc.batch, rc.llm, rc.limiter
	if b.Model != "deepseek-chat" || b.Concurrency != 8 || b.System != "S" || *b.MaxTokens != 5 || !b.Merge ||
		b.Packer.MaxItems != 7 || b.Output != "in.out.jsonl" || b.RunSettings["rpm"] != "500" || b.Price == nil {
		t.Errorf("batch.Config = %+v", b)
	}
	if l.BaseURL != "https://api.deepseek.com/v1" || l.APIKeys[0] != "k" || l.Timeout != 15*time.Minute ||
		l.MaxAttempts != 3 || l.Concurrency != 8 || l.Backoff == nil || l.BreakAfter != 30*time.Second {
		t.Errorf("llm.Config = %+v", l)
	}
	if lim.RPM != 500 || lim.TPM != 9000 || lim.Concurrency != 8 || lim.Adapt || lim.Margin != 0.03 {
		t.Errorf("limiter config = %+v", lim)
	}
}
