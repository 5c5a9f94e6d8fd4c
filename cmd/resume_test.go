package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// startMock starts the mock provider for a test, requiring key when it is not "".
func startMock(t *testing.T, key string) string {
	t.Helper()
	srv, err := mock.Start(mock.Config{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.URL
}

// optionsOnly returns the options a command line stands for, without the process's streams and hooks.
func optionsOnly(o *RunOptions) RunOptions {
	c := *o
	c.IO, c.Getenv, c.Stop = nil, nil, nil
	return c
}

// TestStatusPrintsTheCommandThatResumes runs a job with many flags, some from the environment and a config
// profile, then checks that the command status prints parses back to the same options, runs, and finishes
// the job; and that the key is nowhere in what the job wrote or status printed.
func TestStatusPrintsTheCommandThatResumes(t *testing.T) {
	const key = "sk-resume-test-7f3a9c"
	in := writeInput(t, `{"id":"a","text":"one"}`, `{"id":"b","text":"two"}`)
	dir := filepath.Dir(in)
	out, report := filepath.Join(dir, "labels.jsonl"), filepath.Join(dir, "report.json")
	tmpl := filepath.Join(dir, "prompt.tmpl")
	writeText(t, tmpl, "Label: {{.text}}")
	cfg := writeConfig(t, "rpm = 6000\nbreak_after = \"30s\"\n[profiles.p]\nconcurrency = 3\n")
	env := map[string]string{"MY_KEY": key, "LLMBATCH_TPM": "900000"}
	args := []string{"run", "-c", cfg, "--profile", "p", "--provider", "mock", "--base-url", startMock(t, key),
		"--api-key-env", "MY_KEY", "--adapt=false", "--max-attempts", "2", "--base-delay", "5ms", "--max-delay", "1s",
		"--timeout", "20s", "--connect-timeout", "3s", "--merge", "--batch-items", "5", "--batch-tokens", "3000",
		"--json-mode=false", "--fallback-models", "mock-2,mock-3", "--price", "mock-1=1/2", "--max-cost", "100",
		"--system", "Be brief.", "--template-file", tmpl, "--max-tokens", "50", "--temperature", "0.5",
		"--report", report, "--progress", "off", "--log-format", "json", "-q", "-o", out, in}
	want, err := parseRun(t, env, args[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	code, _, runErr := execute(t, env, args...)
	if code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, runErr)
	}
	appendText(t, in, `{"id":"c","text":"three"}`+"\n")

	st := statusJSON(t, out)
	if st.State != "incomplete" || st.Input == nil || *st.Input != in || *st.Left != 1 {
		t.Fatalf("status = state %q, input %v, left %v; want incomplete, the recorded input, 1", st.State, st.Input, st.Left)
	}
	// Only the key is left in the environment: the command must carry the rest.
	keyOnly := map[string]string{"MY_KEY": key}
	resume := shellSplit(t, st.Resume)
	got, err := parseRun(t, keyOnly, resume[2:]...)
	if err != nil {
		t.Fatalf("the printed command %s: %v", st.Resume, err)
	}
	if g, w := optionsOnly(got), optionsOnly(want); !reflect.DeepEqual(g, w) {
		t.Errorf("the printed command\n  %s\nparses to  %+v\nthe run was %+v", st.Resume, g, w)
	}
	if code, _, stderr := execute(t, keyOnly, resume[1:]...); code != exitOK {
		t.Fatalf("the printed command: exit %d\n%s", code, stderr)
	}
	if st := statusJSON(t, out); st.State != "complete" || st.Done != 3 {
		t.Errorf("after the printed command, status = state %q, done %d; want complete, 3", st.State, st.Done)
	}
	_, text, statusErr := execute(t, nil, "status", out)
	for name, b := range map[string]string{"journal": readText(t, out+".ckpt"), "report": readText(t, report),
		"status": text + statusErr, "status --json": st.Resume + strings.Join(st.Warnings, ""), "run's stderr": runErr} {
		if strings.Contains(b, key) {
			t.Errorf("the %s holds the key:\n%s", name, b)
		}
	}
	if !strings.Contains(readText(t, out+".ckpt"), `"api-key-env":"MY_KEY"`) {
		t.Errorf("the journal does not record the key's variable:\n%s", readText(t, out+".ckpt"))
	}
}

// TestRunSettingsMaskSecrets runs jobs whose settings carry a secret: a base URL's password and credential
// query, the mock's expected key. None reaches the journal, the report or status, which warns that the
// command needs it back.
func TestRunSettingsMaskSecrets(t *testing.T) {
	const secret = "s3cr3t-9d2e"
	base := startMock(t, "")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		flag string
	}{
		{"base URL", nil, []string{"--base-url", strings.Replace(base, "http://", "http://user:"+secret+"@", 1) + "?api_key=" + secret + "&api-version=2024"}, "--base-url"},
		{"mock key", map[string]string{"LLMBATCH_API_KEY": secret}, []string{"--provider", "mock", "--mock", "latency=1ms, key=" + secret}, "--mock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := writeInput(t, `{"id":"a","prompt":"one"}`, `nope`)
			out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
			report := filepath.Join(filepath.Dir(in), "r.json")
			args := append(append([]string{"run", "--model", "mock-1", "--report", report}, tt.args...), in)
			if code, _, stderr := execute(t, tt.env, args...); code != exitFailedItems {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			_, stdout, stderr := execute(t, nil, "status", out)
			_, js, _ := execute(t, nil, "status", "--json", out)
			for name, b := range map[string]string{"journal": readText(t, out+".ckpt"), "report": readText(t, report),
				"status": stdout + stderr, "status --json": js} {
				if strings.Contains(b, secret) {
					t.Errorf("the %s holds the secret:\n%s", name, b)
				}
			}
			if !strings.Contains(stderr, "warning: the job's "+tt.flag+" held a secret") || !strings.Contains(stdout, masked) {
				t.Errorf("status: stdout\n%s\nstderr\n%s\nwant the command with %s and a warning naming %s", stdout, stderr, masked, tt.flag)
			}
		})
	}
}

// TestStatusOfAnOldJournal checks that a journal written before run settings were recorded still gives
// today's best-effort resume line: the answer-shaping settings, INPUT, and a word on the provider.
func TestStatusOfAnOldJournal(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`)
	out := filepath.Join(filepath.Dir(in), "labels.jsonl")
	mustRun(t, exitOK, "--system", "Be brief.", "-o", out, in)
	appendText(t, in, `{"id":"b","prompt":"two"}`+"\n")
	b := []byte(readText(t, out+".ckpt"))
	header, rest, _ := bytes.Cut(b, []byte("\n"))
	i := bytes.Index(header, []byte(`,"run":{`))
	if i < 0 {
		t.Fatalf("the header records no run settings: %s", header)
	}
	old := append(append(header[:i:i], '}', '\n'), rest...)
	writeText(t, out+".ckpt", string(old))

	st := statusJSON(t, out)
	want := "llmbatch run --model mock-1 --system 'Be brief.' -o " + out + " INPUT"
	if st.Resume != want || len(st.Run) != 0 || st.Input != nil {
		t.Errorf("status of an old journal: resume %q, run %v, input %v\nwant resume %q, no run settings, no input", st.Resume, st.Run, st.Input, want)
	}
	if _, stdout, _ := execute(t, nil, "status", out); !strings.Contains(stdout, "with the --provider or --base-url (or --config) you ran it with") {
		t.Errorf("status of an old journal printed:\n%s", stdout)
	}
	mustRun(t, exitOK, append(shellSplit(t, st.Resume)[2:len(shellSplit(t, st.Resume))-1], in)...)
}

// TestResumeWithOtherLimits checks that a rerun with another concurrency and rate is not refused (run
// settings are not compared) and that status keeps printing the first run's command.
func TestResumeWithOtherLimits(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	mustRun(t, exitOK, "-j", "2", "--rpm", "600", in)
	appendText(t, in, `{"id":"b","prompt":"two"}`+"\n")
	mustRun(t, exitOK, "-j", "7", "--rpm", "6000", "--tpm", "100000", in)
	st := statusJSON(t, out)
	if st.Run["concurrency"] != "2" || st.Run["rpm"] != "600" || st.State != "complete" {
		t.Errorf("status after a rerun with other limits: run %v, state %q; want the first run's -j 2 --rpm 600, complete", st.Run, st.State)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStatusOfAStdinJob checks that a job read from stdin resumes with - as its input, since no file can be
// counted: the command is whole, the input left unknown.
func TestStatusOfAStdinJob(t *testing.T) {
	out := filepath.Join(t.TempDir(), "labels.jsonl")
	ios, stdin, _, errOut := Test()
	stdin.WriteString(`{"id":"a","prompt":"one"}` + "\n" + `{"id":"b","prompt":"two","params":{"max_tokens":0}}` + "\n")
	root := NewRootCmd(&Factory{IO: ios, Getenv: func(string) string { return "" }})
	root.SetArgs([]string{"run", "--provider", "mock", "-j", "2", "-o", out, "-"})
	if c, err := root.ExecuteContextC(t.Context()); exitCode(ios, c, err) != exitFailedItems {
		t.Fatalf("run from stdin: %v\n%s", err, errOut)
	}
	st := statusJSON(t, out)
	want := "llmbatch run --retry-failed --provider mock --concurrency 2 --model mock-1 -o " + out + " -"
	if st.RetryFailed != want || st.Input != nil || st.State != "unknown" {
		t.Errorf("status of a stdin job: retry_failed %q, input %v, state %q\nwant %q, no input, unknown", st.RetryFailed, st.Input, st.State, want)
	}
}

// TestRunSettingsMaskEveryURL: runSettings masks secrets by what a value
// is, not by which flag holds it, so a flag added later is safe too: the
// credentials and secret-looking query values of any URL (alone or in a
// list), and the whole value of a flag named like a secret.
func TestRunSettingsMaskEveryURL(t *testing.T) {
	const pw = "pw-7f3a91"
	fl := NewCmdRun(&Factory{IO: &IOStreams{}}, nil).Flags()
	fl.StringSlice("hooks", nil, "a later flag taking URLs")
	fl.String("api-token", "", "a later flag taking a secret")
	fl.String("broken", "", "a URL that does not parse")
	for name, v := range map[string]string{
		"base-url":  "http://user:" + pw + "@127.0.0.1:1/v1?api_key=" + pw + "&api-version=2024",
		"redis":     "redis://:" + pw + "@cache:6379/0",
		"hooks":     "http://plain.example/a,https://u:" + pw + "@b.example/?token=" + pw,
		"api-token": pw,
		"broken":    "redis://:" + pw + "@host:port:%zz",
		"rpm":       "60",
	} {
		if err := fl.Set(name, v); err != nil {
			t.Fatalf("set --%s: %v", name, err)
		}
	}
	s := runSettings(fl, "in.jsonl")
	for k, v := range s {
		if strings.Contains(v, pw) {
			t.Errorf("runSettings records --%s as %q, with the secret", k, v)
		}
	}
	for _, k := range []string{"base-url", "redis", "hooks", "api-token", "broken"} {
		if !strings.Contains(s[k], masked) {
			t.Errorf("runSettings records --%s as %q, want %s in place of the secret", k, s[k], masked)
		}
	}
	if s["rpm"] != "60" || !strings.HasPrefix(s["hooks"], "http://plain.example/a,") || !strings.Contains(s["redis"], "@cache:6379/0") {
		t.Errorf("runSettings = %v; want what is not secret kept", s)
	}
}
