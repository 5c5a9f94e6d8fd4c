package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

func TestNewCmdStatus(t *testing.T) {
	tests := []struct {
		args string
		want StatusOptions
	}{
		{"out.jsonl", StatusOptions{Output: "out.jsonl"}},
		{"--json --input in.jsonl --checkpoint c.ckpt out.jsonl", StatusOptions{Output: "out.jsonl", Input: "in.jsonl", Checkpoint: "c.ckpt", JSON: true}},
		{"-i in.jsonl out.jsonl", StatusOptions{Output: "out.jsonl", Input: "in.jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := Test()
			var got *StatusOptions
			c := NewCmdStatus(&Factory{IO: ios}, func(_ context.Context, o *StatusOptions) error { got = o; return nil })
			c.SetArgs(strings.Fields(tt.args))
			if err := c.Execute(); err != nil {
				t.Fatalf("Execute(%q) error = %v", tt.args, err)
			}
			tt.want.IO = ios
			if *got != tt.want {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// statusJSON runs `llmbatch status --json` with args and decodes what it prints.
func statusJSON(t *testing.T, args ...string) *JobStatus {
	t.Helper()
	code, stdout, stderr := execute(t, nil, append([]string{"status", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("status --json %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	var st JobStatus
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status --json printed %q: %v", stdout, err)
	}
	return &st
}

// mustRun runs `llmbatch run --provider mock` with args and checks the exit code.
func mustRun(t *testing.T, want int, args ...string) {
	t.Helper()
	code, _, stderr := execute(t, nil, append([]string{"run", "--provider", "mock", "-q"}, args...)...)
	if code != want {
		t.Fatalf("run %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, stderr)
	}
}

// failedJob runs a job that leaves two results, a failed item (the mock answers max_tokens 0 with a 400)
// and a rejected line, and returns the input and output.
func failedJob(t *testing.T) (in, out string) {
	in = writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`, "  ",
		`{"id":"c","prompt":"three","params":{"max_tokens":0}}`, `nope`)
	mustRun(t, exitFailedItems, "--system", "Be brief.", in)
	return in, strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
}

func TestStatusText(t *testing.T) {
	in, out := failedJob(t)
	code, stdout, stderr := execute(t, nil, "status", out)
	if code != exitOK || stderr != "" {
		t.Fatalf("status: exit %d, stderr:\n%s", code, stderr)
	}
	dir := filepath.Dir(in)
	got := strings.ReplaceAll(stdout, dir, "$DIR")
	want := `output:   $DIR/in.out.jsonl
input:    $DIR/in.jsonl (4 records)
state:    failed
done:     2 (2 result lines)
failed:   1 (bad_request 1)
invalid:  1
left:     0
settings: model=mock-1 system='Be brief.'

Redo the 1 failed item:
  llmbatch run --retry-failed --provider mock --quiet --model mock-1 --system 'Be brief.' -o $DIR/in.out.jsonl $DIR/in.jsonl

Fix the 1 rejected line in the input (see $DIR/in.out.errors.jsonl), then:
  llmbatch run --provider mock --quiet --model mock-1 --system 'Be brief.' -o $DIR/in.out.jsonl $DIR/in.jsonl
`
	if got != want {
		t.Errorf("status printed:\n%s\nwant:\n%s", got, want)
	}
}

func TestStatusJSON(t *testing.T) {
	in, out := failedJob(t)
	st := statusJSON(t, out)
	if st.Output != out || st.Errors != strings.TrimSuffix(out, ".jsonl")+".errors.jsonl" || st.Checkpoint != out+".ckpt" ||
		st.Input == nil || *st.Input != in {
		t.Errorf("status --json files = %q, %q, %q, input %v", st.Output, st.Errors, st.Checkpoint, st.Input)
	}
	if st.State != "failed" || st.Running || st.Done != 2 || st.CheckpointDone != 2 || st.ResultLines != 2 ||
		st.Failed != 1 || st.Invalid != 1 || st.Records == nil || *st.Records != 4 || st.Left == nil || *st.Left != 0 {
		t.Errorf("status --json = %+v", st)
	}
	if len(st.ByKind) != 2 || st.ByKind["bad_request"] != 1 || st.ByKind["invalid_input"] != 1 {
		t.Errorf("by_kind = %v, want bad_request 1, invalid_input 1", st.ByKind)
	}
	if st.Settings["model"] != "mock-1" || st.Settings["system"] != "Be brief." || len(st.Settings) != 2 {
		t.Errorf("settings = %v, want model and system only (empty ones left out)", st.Settings)
	}
	if !strings.Contains(st.RetryFailed, "--retry-failed") || strings.Contains(st.Resume, "--retry-failed") || st.Resume == "" {
		t.Errorf("resume = %q, retry_failed = %q", st.Resume, st.RetryFailed)
	}
	if st.Warnings == nil || len(st.Warnings) != 0 {
		t.Errorf("warnings = %#v, want []", st.Warnings)
	}
	// The fields are documented by their JSON names: check that a script sees them as such.
	_, stdout, _ := execute(t, nil, "status", "--json", out)
	for _, field := range []string{`"left": 0`, `"input_records": 4`, `"by_kind"`, `"retry_failed"`, `"state": "failed"`} {
		if !strings.Contains(stdout, field) {
			t.Errorf("status --json lacks %s:\n%s", field, stdout)
		}
	}
}

func TestStatusComplete(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`)
	mustRun(t, exitOK, in)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	st := statusJSON(t, out)
	if st.State != "complete" || st.Done != 2 || st.Left == nil || *st.Left != 0 || st.Resume != "" || st.RetryFailed != "" {
		t.Errorf("status of a complete job = %+v", st)
	}
	_, stdout, _ := execute(t, nil, "status", out)
	if !strings.Contains(stdout, "state:    complete") || strings.Contains(stdout, "llmbatch run") {
		t.Errorf("status of a complete job printed:\n%s", stdout)
	}
}

// TestStatusInterrupted runs a job on half its input, then gives it the rest: status finds the input the
// job recorded, counts what is left and prints a resume command that, run, finishes the job.
func TestStatusInterrupted(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`)
	dir := filepath.Dir(in)
	out := filepath.Join(dir, "labels.jsonl") // not the default: the input is found from the journal
	mustRun(t, exitOK, "--system", "It's a test.", "--temperature", "0", "-o", out, in)
	appendText(t, in, `{"id":"c","prompt":"three"}`+"\n"+`{"id":"d","prompt":"four"}`+"\n\n")

	st := statusJSON(t, out)
	if st.State != "incomplete" || st.Done != 2 || st.Input == nil || *st.Input != in || *st.Records != 4 || *st.Left != 2 {
		t.Fatalf("status of an interrupted job = %+v", st)
	}
	if other := statusJSON(t, "--input", writeInput(t, `{"id":"a","prompt":"one"}`), out); *other.Records != 1 {
		t.Errorf("status --input OTHER counted %d records, want the 1 of the input given", *other.Records)
	}
	want := "llmbatch run --provider mock --quiet --model mock-1 --system 'It'\\''s a test.' --temperature 0 -o " + out + " " + in
	if st.Resume != want {
		t.Fatalf("resume = %s\nwant     %s", st.Resume, want)
	}
	args := shellSplit(t, st.Resume)
	if code, _, stderr := execute(t, nil, args[1:]...); code != exitOK { // the command as printed
		t.Fatalf("the resume command: exit %d\n%s", code, stderr)
	}
	if st := statusJSON(t, out); st.State != "complete" || st.Done != 4 || *st.Left != 0 {
		t.Errorf("status after running the resume command = %+v", st)
	}
}

// TestStatusReconciles damages a finished job as a crash or a user might, and checks that status counts
// what the next run will find, and warns.
func TestStatusReconciles(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`, `{"id":"c","prompt":"three"}`)
	mustRun(t, exitOK, in)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"

	// A result written just before a crash, never recorded in the checkpoint; and a torn last line.
	appendText(t, in, `{"id":"d","prompt":"four"}`+"\n")
	appendText(t, out, `{"id":"d","output":"echo: four","attempts":1}`+"\n"+`{"id":"e","out`)
	st := statusJSON(t, out)
	if st.Done != 4 || st.CheckpointDone != 3 || st.ResultLines != 4 || *st.Left != 0 || st.State != "complete" || len(st.Warnings) != 0 {
		t.Errorf("status with an unrecorded result = %+v", st)
	}

	// A results file that lost lines the checkpoint records as done.
	writeText(t, out, `{"id":"a","output":"echo: one","attempts":1}`+"\n")
	code, _, stderr := execute(t, nil, "status", out)
	if code != exitOK || !strings.Contains(stderr, "warning: 2 items the checkpoint records as done have no line in") {
		t.Errorf("status of a cut results file: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestStatusRunning(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`)
	mustRun(t, exitOK, in)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	snap, err := checkpoint.Load(out + ".ckpt")
	if err != nil {
		t.Fatal(err)
	}
	j, err := checkpoint.Open(out+".ckpt", snap.Settings()) // holds the lock, as a run does
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()

	st := statusJSON(t, out)
	if !st.Running || st.State != "running" || st.Done != 2 {
		t.Errorf("status while a run holds the checkpoint = running %v, state %q, done %d; want true, running, 2", st.Running, st.State, st.Done)
	}
	code, stdout, _ := execute(t, nil, "status", out)
	if code != exitOK || !strings.Contains(stdout, "state:    running: a run holds") || !strings.Contains(stdout, "A run is going on") {
		t.Errorf("status while a run holds the checkpoint: exit %d\n%s", code, stdout)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if st := statusJSON(t, out); st.Running || st.State != "complete" {
		t.Errorf("status after the run let go = running %v, state %q; want false, complete", st.Running, st.State)
	}
}

func TestStatusErrors(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`)
	dir := filepath.Dir(in)
	mustRun(t, exitOK, in)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	corrupt := filepath.Join(dir, "corrupt.jsonl")
	writeText(t, corrupt+".ckpt", `{"llmbatch_checkpoint":1,"settings":{}}`+"\n"+"edited\n"+`{"k":"i:a","s":"d"}`+"\n")
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no checkpoint", []string{filepath.Join(dir, "never.jsonl")}, "no checkpoint " + filepath.Join(dir, "never.jsonl.ckpt")},
		{"no checkpoint, JSON", []string{"--json", filepath.Join(dir, "never.jsonl")}, "no checkpoint"},
		{"other checkpoint missing", []string{"--checkpoint", filepath.Join(dir, "x.ckpt"), out}, "no checkpoint " + filepath.Join(dir, "x.ckpt")},
		{"corrupt checkpoint", []string{corrupt}, "corrupt journal"},
		{"missing input", []string{"--input", filepath.Join(dir, "missing.jsonl"), out}, "--input"},
		{"stdin input", []string{"--input", "-", out}, "stdin"},
		{"no output", nil, "arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, nil, append([]string{"status"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.msg) || stdout != "" {
				t.Errorf("status %s: exit %d, want %d naming %q; stdout %q, stderr:\n%s", strings.Join(tt.args, " "), code, exitUsage, tt.msg, stdout, stderr)
			}
		})
	}
}

func appendText(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeText(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// shellSplit splits a command line as a POSIX shell does, for what shellQuote writes: words separated by
// spaces, single-quoted runs, and \' outside quotes.
func shellSplit(t *testing.T, s string) []string {
	t.Helper()
	var args []string
	var word strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			word.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(s):
			i++
			word.WriteByte(s[i])
			inWord = true
		case c == ' ':
			if inWord {
				args = append(args, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %s", s)
	}
	if inWord {
		args = append(args, word.String())
	}
	return args
}
