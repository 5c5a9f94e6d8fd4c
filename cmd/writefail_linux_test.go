//go:build linux

package cmd_test

// Write failures (issue 6, point 2): llmbatch runs as a child process under
// a file size limit (RLIMIT_FSIZE), so that one of the results, errors and
// checkpoint files fails with EFBIG part way through. The run must stop
// with exit 3 and a message naming the file, record nothing as done or
// failed that its file does not hold, and a rerun without the limit must
// finish the job with one line per id, sending no recorded item again.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// limitEnv carries the file size limit and the command line to the helper.
const limitEnv = "LLMBATCH_HARDENING_FSIZE_EXEC"

// TestHelperExecUnderFsizeLimit is not a test: started by startLimited as a
// copy of the test binary, it sets RLIMIT_FSIZE and replaces itself with
// the llmbatch command line it was given (Go's os/exec cannot set a limit
// on the child it starts).
func TestHelperExecUnderFsizeLimit(t *testing.T) {
	spec := os.Getenv(limitEnv)
	if spec == "" {
		t.Skip("helper process for TestWriteFailure")
	}
	var req struct {
		Limit uint64
		Argv  []string
	}
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(99)
	}
	os.RemoveAll(binDir) // TestMain's directory: exec skips its cleanup
	lim := syscall.Rlimit{Cur: req.Limit, Max: req.Limit}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "helper: setrlimit:", err)
		os.Exit(99)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, limitEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(req.Argv[0], req.Argv, env)
	fmt.Fprintln(os.Stderr, "helper: exec:", err)
	os.Exit(99)
}

// startLimited starts llmbatch with args in dir, under a limit of limit
// bytes per file written.
func startLimited(t *testing.T, dir string, limit int64, args ...string) *proc {
	t.Helper()
	spec, _ := json.Marshal(map[string]any{"Limit": limit, "Argv": append([]string{binary(t)}, args...)})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(self, "-test.run=^TestHelperExecUnderFsizeLimit$"), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, childEnv(limitEnv+"="+string(spec))
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start the helper: %v", err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// completeIDs returns the ids of the complete lines (ending in a newline)
// of a results or errors file; "id" or, for rejected lines, "line".
func completeIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for {
		i := strings.IndexByte(string(data), '\n')
		if i < 0 {
			return ids
		}
		var rec struct {
			ID *string `json:"id"`
		}
		if err := json.Unmarshal(data[:i], &rec); err != nil || rec.ID == nil {
			t.Errorf("%s: not a line with an id: %.100q", filepath.Base(path), data[:i])
		} else {
			ids[*rec.ID]++
		}
		data = data[i+1:]
	}
}

func TestWriteFailure(t *testing.T) {
	binary(t)
	const items = 1500
	failAll := func(prompt string, n int) *reply {
		return errorReply(400, "invalid_value", "Invalid value for 'messages': "+strings.Repeat("no. ", 150))
	}
	// A template whose comment makes the checkpoint's header (which records
	// the template) big, so that the checkpoint reaches the limit first.
	bigTemplate := "{{/* " + strings.Repeat("padding ", 16<<10) + " */}}{{.prompt}}"
	tests := []struct {
		name   string
		script func(string, int) *reply
		limit  func(dir string) int64 // the file size limit, once the input is written
		flags  []string
		file   string // the file that must fail
		status checkpoint.Status
		want   int // exit code of the rerun without a limit
	}{
		{name: "results file", limit: func(string) int64 { return 192 << 10 }, file: "out.jsonl", status: checkpoint.Done},
		{name: "errors file", script: failAll, limit: func(string) int64 { return 192 << 10 },
			file: "out.errors.jsonl", status: checkpoint.Failed, want: 1},
		{name: "checkpoint", flags: []string{"--template-file", "big.tmpl"}, file: "out.jsonl.ckpt", status: checkpoint.Done,
			limit: func(dir string) int64 { return int64(len(bigTemplate)) + 4<<10 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, mock.Config{}, tt.script)
			srv.delay.Store(int64(10 * time.Millisecond)) // commits every 200ms land before the limit
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
			prompts := writeInput(t, in, items)
			if err := os.WriteFile(filepath.Join(dir, "big.tmpl"), []byte(bigTemplate), 0o600); err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(dir, "report.json")
			args := runArgs(srv.base(), out, in, append([]string{"-j", "8", "--max-attempts", "1", "--report", report}, tt.flags...)...)

			p := startLimited(t, dir, tt.limit(dir), args...)
			code := p.wait(t, 30*time.Second)
			stderr := p.stderr.String()
			if code != 3 {
				t.Fatalf("run under a file size limit: exit code %d, want 3\nstderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.file) || !strings.Contains(stderr, "file too large") {
				t.Errorf("stderr does not name %s and its error:\n%s", tt.file, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("stderr shows a panic:\n%s", stderr)
			}
			if fi, err := os.Stat(filepath.Join(dir, tt.file)); err != nil || fi.Size() < tt.limit(dir)-1024 {
				t.Fatalf("%s did not reach the limit (%v, %v): the test proves little", tt.file, fi, err)
			}
			srv.quiesce(t)

			// Nothing recorded that its file does not hold.
			snap, err := checkpoint.Load(out + ".ckpt")
			if err != nil {
				t.Fatalf("checkpoint.Load() = %v", err)
			}
			results, failed := completeIDs(t, out), completeIDs(t, filepath.Join(dir, "out.errors.jsonl"))
			recorded := 0
			for id := range prompts {
				st, ok := snap.Status("i:" + id)
				switch {
				case !ok:
				case st == checkpoint.Done && results[id] == 0:
					t.Errorf("%s is recorded done but has no line in the results", id)
				case st == checkpoint.Failed && failed[id] == 0:
					t.Errorf("%s is recorded failed but has no line in the errors file", id)
				default:
					recorded++
				}
			}
			durable := map[string]bool{}
			for id := range results {
				durable[id] = true
			}
			for id := range failed {
				durable[id] = true
			}
			t.Logf("exit 3 after %d lines in the results, %d in the errors file, %d recorded in the checkpoint; stderr:\n%s",
				len(results), len(failed), recorded, stderr)
			if recorded == 0 {
				t.Errorf("nothing was recorded in the checkpoint before the limit: the test proves little")
			}
			// The report counts as done or failed only what is on disk.
			var rep struct {
				ExitCode int `json:"exit_code"`
				Items    struct {
					Done   int `json:"done"`
					Failed int `json:"failed"`
				} `json:"items"`
			}
			if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &rep) != nil {
				t.Errorf("no report after the failed write: %v", err)
			} else if rep.ExitCode != 3 || rep.Items.Done > len(results) || rep.Items.Failed > len(failed) {
				t.Errorf("report: exit code %d, %d done, %d failed; want 3, and at most the %d and %d lines on disk",
					rep.ExitCode, rep.Items.Done, rep.Items.Failed, len(results), len(failed))
			}
			if len(durable) == 0 || len(durable) == items {
				t.Fatalf("%d of %d items were written before the limit: the test proves little", len(durable), items)
			}

			// A rerun without the limit finishes the job and sends nothing
			// whose outcome was on disk.
			before := srv.counts()
			p = start(t, dir, childEnv(), nil, args...)
			if code := p.wait(t, 30*time.Second); code != tt.want {
				t.Fatalf("rerun without a limit: exit code %d, want %d\nstderr:\n%s", code, tt.want, p.stderr.String())
			}
			srv.quiesce(t)
			after := srv.counts()
			resent := 0
			for id := range durable {
				if after[prompts[id]] != before[prompts[id]] {
					resent++
				}
			}
			if resent > 0 {
				t.Errorf("the rerun sent %d items again whose outcome was on disk", resent)
			}
			if tt.want == 0 {
				checkComplete(t, out, prompts)
				return
			}
			failed = completeIDs(t, filepath.Join(dir, "out.errors.jsonl"))
			if len(failed) != items {
				t.Errorf("errors file has lines for %d ids, want %d", len(failed), items)
			}
			for id, n := range failed {
				if n != 1 {
					t.Errorf("errors file has %d lines for %s, want 1", n, id)
				}
			}
		})
	}
}
