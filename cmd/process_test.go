package cmd_test

// Tests that run the real llmbatch binary as a child process against an
// httptest server wrapping the mock provider: SIGKILL and resume, SIGINT,
// the checkpoint lock, exit codes and the API key. The binary is built once
// per test binary, on first use; -short skips these tests.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// childTimeout bounds every child process, whatever a test expects of it.
const childTimeout = 60 * time.Second

var (
	binDir    string // TestMain's temporary directory for the binary
	buildOnce sync.Once
	binPath   string // the llmbatch binary, once built
	buildErr  error  // why it could not be built
)

// TestMain removes the binary the tests built; it is built on first use, so
// that runs of other tests do not pay for it. It fails the tests if any
// goroutine is left running once they pass (as goleak.VerifyTestMain does,
// which would exit before the binary is removed): every goroutine of cmd
// and of the runs it starts must end with them.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "llmbatch-process-test-")
		if err != nil {
			buildErr = err
		} else {
			binDir = dir
			defer os.RemoveAll(dir)
		}
		code := m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
				code = 1
			}
		}
		return code
	}())
}

// buildBinary builds the module's main package (the parent of cmd) into out.
// go test puts its own go first on PATH.
func buildBinary(out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	c := exec.Command(goTool, "build", "-o", out, ".")
	c.Dir = ".."
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}
	return nil
}

// binary returns the built llmbatch, skipping the test with -short.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the llmbatch binary as a child process; skipped with -short")
	}
	buildOnce.Do(func() {
		if buildErr == nil {
			binPath = filepath.Join(binDir, "llmbatch")
			buildErr = buildBinary(binPath)
		}
	})
	if buildErr != nil {
		t.Fatalf("cannot build llmbatch: %v", buildErr)
	}
	return binPath
}

// ---- the server ----

// reply is a scripted answer that replaces the mock's.
type reply struct {
	status int
	header map[string]string
	body   string
}

// server is an httptest server in front of a mock.Handler. It counts, per
// prompt (the text of the last user message), the requests received and the
// 200s answered. It can delay every answer, hang until the client goes away,
// or answer from a script.
type server struct {
	*httptest.Server
	mock   *mock.Handler
	script func(prompt string, n int) *reply // n counts this prompt's requests, from 1; nil result: the mock answers

	delay atomic.Int64 // nanoseconds to wait before answering
	hang  atomic.Bool  // block until the client goes away

	inflight atomic.Int64
	total    atomic.Int64

	mu        sync.Mutex
	reqs      map[string]int // prompt → requests received
	oks       map[string]int // prompt → 200s answered
	auth      map[string]int // Authorization header → requests
	lastStart time.Time      // when the latest request arrived
}

func newServer(t *testing.T, cfg mock.Config, script func(prompt string, n int) *reply) *server {
	t.Helper()
	s := &server{mock: mock.New(cfg), script: script,
		reqs: map[string]int{}, oks: map[string]int{}, auth: map[string]int{}}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

func (s *server) base() string { return s.URL + "/v1" }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.total.Add(1)
	body, _ := io.ReadAll(r.Body)
	prompt := lastUserText(body)
	s.mu.Lock()
	s.reqs[prompt]++
	n := s.reqs[prompt]
	s.auth[r.Header.Get("Authorization")]++
	s.lastStart = time.Now()
	s.mu.Unlock()

	ctx := r.Context()
	if s.hang.Load() {
		<-ctx.Done()
		return
	}
	if d := time.Duration(s.delay.Load()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	if rp := s.scripted(prompt, n); rp != nil {
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		sw.WriteHeader(rp.status)
		io.WriteString(w, rp.body)
	} else {
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mock.ServeHTTP(sw, r)
	}
	if sw.status == http.StatusOK {
		s.mu.Lock()
		s.oks[prompt]++
		s.mu.Unlock()
	}
}

func (s *server) scripted(prompt string, n int) *reply {
	if s.script == nil {
		return nil
	}
	return s.script(prompt, n)
}

func lastUserText(body []byte) string {
	var req llm.ChatRequest
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	text := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			text = llm.TextContent(m.Content)
		}
	}
	return text
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// counts returns a copy of the requests received per prompt.
func (s *server) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(map[string]int, len(s.reqs))
	for k, v := range s.reqs {
		c[k] = v
	}
	return c
}

// answered returns the prompts that got a 200.
func (s *server) answered() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := make(map[string]bool, len(s.oks))
	for k := range s.oks {
		a[k] = true
	}
	return a
}

func (s *server) started() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastStart
}

// quiesce waits until no handler is running, so that counts taken next do
// not move because of a process that is already dead.
func (s *server) quiesce(t *testing.T) {
	t.Helper()
	if !waitFor(5*time.Second, func() bool { return s.inflight.Load() == 0 }) {
		t.Fatalf("server still has %d requests in flight 5s after the client ended", s.inflight.Load())
	}
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// ---- the child process ----

type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when the process has been waited for
}

// childEnv is the test's environment without any API key or llmbatch
// setting, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LLMBATCH_") || strings.HasSuffix(k, "_API_KEY") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// start starts llmbatch with args in dir. The process is killed, if still
// running, when the test ends.
func start(t *testing.T, dir string, env []string, stdin io.Reader, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	p := &proc{cmd: exec.CommandContext(ctx, binary(t), args...), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdin = dir, env, stdin
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start llmbatch: %v", err)
	}
	go func() {
		p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits at most d for the process to exit and returns its exit code
// (-1 when a signal ended it).
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("llmbatch %s still running after %v; killed it\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), d, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// runArgs is `llmbatch run` against srv writing out, plus extra flags, for
// input in.
func runArgs(base, out, in string, extra ...string) []string {
	args := []string{"run", "--base-url", base, "--model", "m", "--progress", "off", "-o", out}
	args = append(args, extra...)
	return append(args, in)
}

// ---- files ----

// writeInput writes n records {"id":"k-<i>","prompt":"item <i>: ..."} to path
// and returns the prompts by id. Prompts are about 190 bytes, so that the
// result lines are long enough for a 64 KiB write buffer to fill between
// commits, which puts lines on disk ahead of the checkpoint and tears lines
// at kills.
func writeInput(t *testing.T, path string, n int) map[string]string {
	t.Helper()
	var b strings.Builder
	prompts := make(map[string]string, n)
	for i := 1; i <= n; i++ {
		id := "k-" + strconv.Itoa(i)
		prompt := fmt.Sprintf("item %d: say something about the number %d. %s", i, i*7, strings.Repeat("padding ", 18))
		prompts[id] = prompt
		line, _ := json.Marshal(map[string]string{"id": id, "prompt": prompt})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return prompts
}

type resultLine struct {
	ID     *string `json:"id"`
	Output *string `json:"output"`
}

// readResults reads the results file. Complete lines (ending in a newline)
// must be result objects; a last line without a newline, left by a kill, is
// torn. It returns the outputs by id, every id in order of the file
// (duplicates included), and the torn tail.
func readResults(t *testing.T, path string) (outputs map[string]string, ids []string, torn string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil, ""
	} else if err != nil {
		t.Fatal(err)
	}
	outputs = map[string]string{}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return outputs, ids, string(data)
		}
		line := data[:i]
		data = data[i+1:]
		var r resultLine
		if err := json.Unmarshal(line, &r); err != nil || r.ID == nil || r.Output == nil {
			t.Errorf("%s:%d: not a result line (%v): %.120q", filepath.Base(path), n, err, line)
			continue
		}
		outputs[*r.ID] = *r.Output
		ids = append(ids, *r.ID)
	}
	return outputs, ids, ""
}

// checkComplete checks that the results file holds exactly one well-formed
// line per input id with the mock's answer, and nothing torn or unknown.
func checkComplete(t *testing.T, path string, prompts map[string]string) {
	t.Helper()
	outputs, ids, torn := readResults(t, path)
	if torn != "" {
		t.Errorf("results end in a torn line: %.120q", torn)
	}
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	var dups, unknown, wrong []string
	for id, k := range seen {
		if k > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", id, k))
		}
		p, ok := prompts[id]
		if !ok {
			unknown = append(unknown, id)
		} else if want := mock.Answer(p); outputs[id] != want {
			wrong = append(wrong, fmt.Sprintf("%s: %q, want %q", id, outputs[id], want))
		}
	}
	missing := 0
	for id := range prompts {
		if seen[id] == 0 {
			missing++
		}
	}
	if len(dups)+len(unknown)+len(wrong)+missing > 0 {
		t.Errorf("results: %d lines for %d ids: %d ids missing, duplicated %s, unknown %s, wrong %s",
			len(ids), len(prompts), missing, short(dups), short(unknown), short(wrong))
	}
}

func short(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%q and %d more", s[:5], len(s)-5)
	}
	return fmt.Sprintf("%q", s)
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// killWhen waits d, then, if watch is not "", until the file watch changes
// size (for at most a second), and kills p with SIGKILL. It reports whether
// the kill ended p, and false if p had exited by itself.
func killWhen(p *proc, d time.Duration, watch string) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return false
	case <-t.C:
	}
	if watch != "" {
		size := fileSize(watch)
		for end := time.Now().Add(time.Second); fileSize(watch) == size && time.Now().Before(end) && p.running(); {
			time.Sleep(50 * time.Microsecond)
		}
	}
	p.cmd.Process.Kill()
	<-p.done
	return p.cmd.ProcessState.ExitCode() == -1
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// ---- the tests ----

func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("LLMBATCH_TEST_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set LLMBATCH_TEST_SEED to repeat)", s)
	return s
}

// TestKillResume kills a run with SIGKILL at random moments, reruns the same
// command each time, and finally lets it finish. The results must end up
// holding exactly one line per id, and no item whose line was in the results
// file when a rerun started may be requested again from then on.
func TestKillResume(t *testing.T) {
	binary(t)
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, sd>>1))
	srv := newServer(t, mock.Config{Latency: 2 * time.Millisecond, Jitter: 3 * time.Millisecond, FailRate: 0.05, Seed: sd}, nil)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	prompts := writeInput(t, in, 5000)
	args := runArgs(srv.base(), out, in, "-j", "16", "--max-attempts", "10", "--base-delay", "1ms", "--max-delay", "20ms", "-q")
	env := childEnv()

	// phase k: what was durable, and how often each prompt had been
	// requested, when run k started.
	type phase struct {
		durable map[string]string
		counts  map[string]int
	}
	var phases []phase
	prevDurable := map[string]string{}
	kills, torn := 0, 0
	finished := false
	deadline := time.Now().Add(25 * time.Second)
	for run := 1; !finished; run++ {
		durable, _, tail := readResults(t, out)
		if tail != "" {
			torn++
		}
		for id := range prevDurable {
			if _, ok := durable[id]; !ok {
				t.Errorf("before run %d: the result line of %s, on disk before, is gone", run, id)
			}
		}
		prevDurable = durable
		phases = append(phases, phase{durable, srv.counts()})

		p := start(t, dir, env, nil, args...)
		if kills < 12 && time.Now().Before(deadline) {
			// Kill at a random moment, or just after the results or the
			// checkpoint grew: between writing a line and recording it, or
			// just after recording.
			d := 30*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
			watch := []string{"", out, out + ".ckpt"}[run%3]
			if killWhen(p, d, watch) {
				kills++
				srv.quiesce(t)
				continue
			}
		}
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("run %d: exit code %d, want 0\nstderr:\n%s", run, code, p.stderr.String())
		}
		srv.quiesce(t)
		finished = true
	}
	if kills < 3 {
		t.Fatalf("only %d kills landed before the job finished: the test proved little", kills)
	}

	checkComplete(t, out, prompts)
	final := srv.counts()
	resent := 0
	for k, ph := range phases {
		for id := range ph.durable {
			p := prompts[id]
			if extra := final[p] - ph.counts[p]; extra > 0 {
				resent++
				if resent <= 10 {
					t.Errorf("%s: its result was on disk before run %d started, yet it was requested %d more times", id, k+1, extra)
				}
			}
		}
	}
	if resent > 10 {
		t.Errorf("... %d such resends in all", resent)
	}
	if errs := lines(t, filepath.Join(dir, "out.errors.jsonl")); len(errs) > 0 {
		t.Errorf("errors file has %d lines after a complete job, e.g. %s", len(errs), errs[0])
	}
	var requests int
	for _, c := range final {
		requests += c
	}
	t.Logf("%d runs, %d killed (%d left a torn line); %d requests for %d items", len(phases), kills, torn, requests, len(prompts))

	// The checkpoint and the results agree: one more run sends nothing and
	// changes nothing.
	before, _ := os.ReadFile(out)
	total := srv.total.Load()
	p := start(t, dir, env, nil, args...)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("rerun of a finished job: exit code %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if n := srv.total.Load() - total; n != 0 {
		t.Errorf("rerun of a finished job sent %d requests, want 0", n)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
		t.Errorf("rerun of a finished job changed the results file (%d → %d bytes)", len(before), len(after))
	}
}

// TestSignalGraceful interrupts runs with SIGINT or SIGTERM: the first asks
// for a graceful stop (requests in flight are finished and recorded, exit
// 130), a second one abandons requests in flight at once (exit 130). Either
// way a rerun completes the job without sending a recorded item again.
func TestSignalGraceful(t *testing.T) {
	binary(t)
	env := childEnv()

	graceful := func(t *testing.T, sig os.Signal) {
		srv := newServer(t, mock.Config{}, nil)
		srv.delay.Store(int64(300 * time.Millisecond))
		dir := t.TempDir()
		in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
		prompts := writeInput(t, in, 200)
		args := runArgs(srv.base(), out, in, "-j", "4", "-q")
		p := start(t, dir, env, nil, args...)
		// Signal 100ms into the second round of four requests (about 500ms
		// in), so that every worker is busy for 200ms more: no request may
		// start after the signal.
		if !waitFor(10*time.Second, func() bool { return len(srv.answered()) >= 4 && srv.inflight.Load() == 4 }) {
			t.Fatalf("after 10s the server answered %d requests with %d in flight, want 4 and 4\nstderr:\n%s",
				len(srv.answered()), srv.inflight.Load(), p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		if !p.running() {
			t.Fatalf("run ended before the signal: %s", p.stderr.String())
		}
		sent, before := time.Now(), srv.total.Load()
		p.signal(t, sig)
		code := p.wait(t, 5*time.Second)
		took := time.Since(sent)
		if code != 130 {
			t.Fatalf("exit code after %v = %d, want 130\nstderr:\n%s", sig, code, p.stderr.String())
		}
		srv.quiesce(t)
		if n := srv.total.Load() - before; n > 0 {
			t.Errorf("%d requests were sent after %v, up to %v after it; want none", n, sig, srv.started().Sub(sent).Round(time.Millisecond))
		}
		outputs, ids, torn := readResults(t, out)
		if torn != "" {
			t.Errorf("a graceful stop left a torn line: %.120q", torn)
		}
		if len(ids) != len(outputs) {
			t.Errorf("results hold %d lines for %d ids", len(ids), len(outputs))
		}
		answered := srv.answered()
		for id := range outputs {
			if !answered[prompts[id]] {
				t.Errorf("%s is in the results but the server never answered it", id)
			}
		}
		for id, prompt := range prompts {
			if _, ok := outputs[id]; answered[prompt] && !ok {
				t.Errorf("%s was answered before the process exited but is not in the results", id)
			}
		}
		t.Logf("exit 130 %v after %v with %d results", took.Round(time.Millisecond), sig, len(outputs))

		counts := srv.counts()
		srv.delay.Store(0)
		p = start(t, dir, env, nil, args...)
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("rerun: exit code %d, want 0\nstderr:\n%s", code, p.stderr.String())
		}
		srv.quiesce(t)
		checkComplete(t, out, prompts)
		final := srv.counts()
		for id := range outputs {
			if p := prompts[id]; final[p] != counts[p] {
				t.Errorf("%s: recorded before the rerun, yet requested %d more times", id, final[p]-counts[p])
			}
		}
	}
	t.Run("first SIGINT", func(t *testing.T) { graceful(t, os.Interrupt) })
	t.Run("SIGTERM", func(t *testing.T) { graceful(t, syscall.SIGTERM) })

	t.Run("second SIGINT", func(t *testing.T) {
		srv := newServer(t, mock.Config{}, nil)
		srv.hang.Store(true) // answers only when the client goes away
		dir := t.TempDir()
		in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
		prompts := writeInput(t, in, 20)
		args := runArgs(srv.base(), out, in, "-j", "4", "-q")
		p := start(t, dir, env, nil, args...)
		if !waitFor(10*time.Second, func() bool { return srv.inflight.Load() == 4 }) {
			t.Fatalf("the server has %d requests in flight, want 4", srv.inflight.Load())
		}
		p.signal(t, os.Interrupt)
		time.Sleep(300 * time.Millisecond)
		if !p.running() {
			t.Fatalf("the first SIGINT ended the run at once (exit %d); want it to wait for the requests in flight",
				p.cmd.ProcessState.ExitCode())
		}
		sent := time.Now()
		p.signal(t, os.Interrupt)
		code := p.wait(t, 3*time.Second)
		if code != 130 {
			t.Fatalf("exit code after a second SIGINT = %d, want 130\nstderr:\n%s", code, p.stderr.String())
		}
		t.Logf("exit 130 %v after the second SIGINT", time.Since(sent).Round(time.Millisecond))
		srv.quiesce(t)
		if _, ids, _ := readResults(t, out); len(ids) != 0 {
			t.Errorf("results hold %d lines; the server answered nothing", len(ids))
		}

		// Abandoned requests are not failures: a plain rerun redoes them.
		srv.hang.Store(false)
		p = start(t, dir, env, nil, args...)
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("rerun: exit code %d, want 0\nstderr:\n%s", code, p.stderr.String())
		}
		checkComplete(t, out, prompts)
	})
}

// TestLockedCheckpoint starts a second run on the output of a run that is
// still going: it must refuse at once, exit 2, and send nothing.
func TestLockedCheckpoint(t *testing.T) {
	binary(t)
	env := childEnv()
	tests := []struct {
		name  string
		extra []string // flags of the second run
		skip  string
	}{
		{name: "same output"},
		{name: "same output, other checkpoint", extra: []string{"--checkpoint", "other.ckpt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			slow := newServer(t, mock.Config{}, nil)
			slow.hang.Store(true)
			other := newServer(t, mock.Config{}, nil)
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
			writeInput(t, in, 20)

			first := start(t, dir, env, nil, runArgs(slow.base(), out, in, "-j", "2", "-q")...)
			if !waitFor(10*time.Second, func() bool { return slow.inflight.Load() > 0 }) {
				t.Fatalf("the first run sent nothing\nstderr:\n%s", first.stderr.String())
			}
			second := start(t, dir, env, nil, runArgs(other.base(), out, in, append([]string{"-j", "2", "-q"}, tt.extra...)...)...)
			code := second.wait(t, 10*time.Second)
			msg := strings.ToLower(second.stderr.String())
			if code != 2 {
				t.Errorf("second run on a locked output: exit code %d, want 2\nstderr:\n%s", code, msg)
			}
			if !strings.Contains(msg, "lock") && !strings.Contains(msg, "another process") {
				t.Errorf("second run's message does not mention the lock or the other process:\n%s", msg)
			}
			if n := other.total.Load(); n != 0 {
				t.Errorf("second run sent %d requests, want 0", n)
			}
			if !first.running() {
				t.Errorf("the first run ended (exit %d)\nstderr:\n%s", first.cmd.ProcessState.ExitCode(), first.stderr.String())
			}
		})
	}
}

func errorReply(status int, code, msg string) *reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code}})
	return &reply{status: status, body: string(b)}
}

// TestExitCodes checks the exit codes of DESIGN §6 with a real process.
func TestExitCodes(t *testing.T) {
	binary(t)
	const items = 40
	always := func(r *reply) func(string, int) *reply { return func(string, int) *reply { return r } }
	tests := []struct {
		name   string
		cfg    mock.Config
		script func(string, int) *reply
		input  string // "" writes items records; a name not written is missing
		stdin  string
		noOut  bool // no -o
		flags  []string
		want   int
		check  func(t *testing.T, srv *server, dir, stderr string)
	}{
		{name: "401 stops the run", script: always(errorReply(401, "invalid_api_key", "Incorrect API key provided.")), want: 3,
			check: func(t *testing.T, srv *server, dir, stderr string) {
				if !strings.Contains(stderr, "401") {
					t.Errorf("stderr does not mention the 401:\n%s", stderr)
				}
				if n := srv.total.Load(); n > 8 {
					t.Errorf("%d requests sent after a 401 with -j 4; want the run stopped at once", n)
				}
			}},
		{name: "quota spent stops the run", cfg: mock.Config{Quota: 5}, want: 3,
			check: func(t *testing.T, srv *server, dir, stderr string) {
				if n := srv.total.Load(); n > 5+8 {
					t.Errorf("%d requests sent for a quota of 5 with -j 4; want the run stopped at once", n)
				}
			}},
		{name: "every item 400", script: always(errorReply(400, "invalid_value", "Invalid value for 'messages'.")), want: 1,
			check: func(t *testing.T, srv *server, dir, stderr string) {
				errs := lines(t, filepath.Join(dir, "out.errors.jsonl"))
				ids := map[string]bool{}
				for _, l := range errs {
					var rec struct {
						ID    string `json:"id"`
						Error struct {
							Kind   string `json:"kind"`
							Status int    `json:"status"`
						} `json:"error"`
					}
					if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Error.Status != 400 {
						t.Errorf("errors line %q: want an item failed with status 400 (%v)", l, err)
					}
					ids[rec.ID] = true
				}
				if len(errs) != items || len(ids) != items {
					t.Errorf("errors file holds %d lines for %d ids, want %d", len(errs), len(ids), items)
				}
				if res := lines(t, filepath.Join(dir, "out.jsonl")); len(res) != 0 {
					t.Errorf("results hold %d lines, want none", len(res))
				}
			}},
		{name: "missing input", input: "missing.jsonl", want: 2},
		{name: "input is a directory", input: ".", want: 2},
		{name: "stdin without -o", input: "-", stdin: `{"id":"a","prompt":"x"}` + "\n", noOut: true, want: 2},
		{name: "bad flag value", flags: []string{"-j", "0"}, want: 2},
		{name: "unknown flag", flags: []string{"--no-such-flag"}, want: 2},
		{name: "empty input", input: "empty.jsonl", want: 0},
		{name: "stdin with -o", input: "-", stdin: `{"id":"a","prompt":"x"}` + "\n", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.cfg, tt.script)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o644)
			in := tt.input
			if in == "" {
				in = "in.jsonl"
				writeInput(t, filepath.Join(dir, in), items)
			}
			args := []string{"run", "--base-url", srv.base(), "--model", "m", "--progress", "off", "-q",
				"-j", "4", "--max-attempts", "2", "--base-delay", "1ms", "--max-delay", "5ms"}
			if !tt.noOut {
				args = append(args, "-o", "out.jsonl")
			}
			args = append(append(args, tt.flags...), in)
			p := start(t, dir, childEnv(), strings.NewReader(tt.stdin), args...)
			code := p.wait(t, 20*time.Second)
			if code != tt.want {
				t.Errorf("llmbatch %s: exit code %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, tt.want, p.stderr.String())
			}
			if tt.want >= 2 && strings.TrimSpace(p.stderr.String()) == "" {
				t.Errorf("exit code %d with nothing on stderr", code)
			}
			if tt.want == 2 {
				if n := srv.total.Load(); n != 0 {
					t.Errorf("exit 2 means nothing was sent; the server got %d requests", n)
				}
			}
			if tt.check != nil {
				tt.check(t, srv, dir, p.stderr.String())
			}
		})
	}
}

// TestKeyNeverLeaks runs with a key in the environment and debug logs
// through 429s, 500s and 400s: the key must reach the server and nowhere
// else: not stdout, stderr, the results, the errors file or the checkpoint.
func TestKeyNeverLeaks(t *testing.T) {
	binary(t)
	const key = "sk-test-SECRET-123"
	const items = 30
	srv := newServer(t, mock.Config{}, func(prompt string, n int) *reply {
		var i int
		fmt.Sscanf(prompt, "item %d:", &i)
		switch {
		case i%5 == 0:
			return errorReply(400, "invalid_value", "Invalid value for 'messages'.")
		case n == 1:
			r := errorReply(429, "rate_limit_exceeded", "Rate limit reached for requests.")
			r.header = map[string]string{"retry-after-ms": "5"}
			return r
		case n == 2:
			return errorReply(500, "server_error", "The server had an error while processing your request.")
		}
		return nil
	})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	writeInput(t, in, items)
	// --adapt=false: this server's 429s are scripted, one to each item
	// whatever the pace; learning a pace from them only slows the test
	// (the secrets it checks are the same either way).
	p := start(t, dir, childEnv("LLMBATCH_API_KEY="+key), nil,
		runArgs(srv.base(), out, in, "-j", "4", "--max-attempts", "5", "--base-delay", "1ms", "--max-delay", "10ms",
			"--adapt=false", "-v", "--log-format", "json")...)
	code := p.wait(t, 30*time.Second)
	if code != 1 {
		t.Errorf("exit code %d, want 1 (some items failed with 400)\nstderr:\n%s", code, p.stderr.String())
	}

	srv.mu.Lock()
	for h, n := range srv.auth {
		if h != "Bearer "+key {
			t.Errorf("%d requests had Authorization %q, want %q", n, h, "Bearer "+key)
		}
	}
	srv.mu.Unlock()
	if res := lines(t, out); len(res) != items-items/5 {
		t.Errorf("results hold %d lines, want %d", len(res), items-items/5)
	}

	debug := 0
	for _, l := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		var rec struct {
			Level string `json:"level"`
		}
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &rec) == nil && rec.Level == "DEBUG" {
			debug++
		}
	}
	if debug == 0 {
		t.Errorf("no debug log lines on stderr with -v --log-format json; the test proves little\nstderr:\n%s", p.stderr.String())
	}

	places := map[string][]byte{"stdout": p.stdout.Bytes(), "stderr": p.stderr.Bytes()}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		places[e.Name()] = b
	}
	for _, f := range []string{"out.jsonl", "out.errors.jsonl", "out.jsonl.ckpt"} {
		if _, ok := places[f]; !ok {
			t.Errorf("%s was not written", f)
		}
	}
	for name, b := range places {
		for _, s := range []string{key, "SECRET"} {
			if i := bytes.Index(b, []byte(s)); i >= 0 {
				t.Errorf("%s holds %q: …%s…", name, s, b[max(i-60, 0):min(i+60, len(b))])
			}
		}
	}
}
