package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// counting wraps a handler and counts chat requests by prompt.
type counting struct {
	h    http.Handler
	mu   sync.Mutex
	seen map[string]int
}

func newCounting(h http.Handler) *counting { return &counting{h: h, seen: map[string]int{}} }

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req llm.ChatRequest
	body := new(strings.Builder)
	_, _ = bufio.NewReader(r.Body).WriteTo(body)
	if json.Unmarshal([]byte(body.String()), &req) == nil && len(req.Messages) > 0 {
		c.mu.Lock()
		c.seen[llm.TextContent(req.Messages[len(req.Messages)-1].Content)]++
		c.mu.Unlock()
	}
	r.Body = readCloser{strings.NewReader(body.String())}
	c.h.ServeHTTP(w, r)
}

func (c *counting) count(prompt string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[prompt]
}

func (c *counting) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.seen {
		n += v
	}
	return n
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// job is one test run's files and settings.
type job struct {
	t      *testing.T
	dir    string
	input  string
	server *httptest.Server
}

func newJob(t *testing.T, h http.Handler, lines ...string) *job {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &job{t: t, dir: dir, input: in, server: srv}
}

func (j *job) out() string { return filepath.Join(j.dir, "in.out.jsonl") }

func (j *job) config(mod ...func(*Config)) Config {
	j.t.Helper()
	f, err := os.Open(j.input)
	if err != nil {
		j.t.Fatal(err)
	}
	j.t.Cleanup(func() { f.Close() })
	lim := llm.NewLimiter(0, 0)
	c, err := llm.New(llm.Config{BaseURL: j.server.URL + "/v1", Limiter: lim, MaxAttempts: 4,
		Backoff: func(int) time.Duration { return 0 }, Timeout: 5 * time.Second})
	if err != nil {
		j.t.Fatal(err)
	}
	cfg := Config{Input: f, InputPath: j.input, Output: j.out(), Client: c,
		Model: "m", Concurrency: 4}
	for _, m := range mod {
		m(&cfg)
	}
	return cfg
}

func (j *job) run(mod ...func(*Config)) (*Summary, error) {
	j.t.Helper()
	return Run(j.t.Context(), j.config(mod...))
}

// lines reads a JSONL file into objects.
func lines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s line %d is not JSON: %q", path, i+1, l)
		}
		out = append(out, m)
	}
	return out
}

func prompts(n int) []string {
	var ls []string
	for i := range n {
		ls = append(ls, fmt.Sprintf(`{"id":"k%d","prompt":"item %d"}`, i, i))
	}
	return ls
}

func TestRunWritesOneLinePerItem(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{}))
	j := newJob(t, srv, prompts(50)...)
	sum, err := j.run()
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if sum.Done != 50 || !sum.Complete() {
		t.Errorf("summary = %+v, want 50 done and complete", sum)
	}
	got := map[string]string{}
	for _, l := range lines(t, j.out()) {
		got[l["id"].(string)] = l["output"].(string)
		if l["attempts"].(float64) != 1 || l["model"] != "m" || l["finish_reason"] != "stop" {
			t.Errorf("result line %v: want attempts 1, model m, finish_reason stop", l)
		}
	}
	for i := range 50 {
		if want := mock.Answer(fmt.Sprintf("item %d", i)); got[fmt.Sprintf("k%d", i)] != want {
			t.Errorf("output of k%d = %q, want %q", i, got[fmt.Sprintf("k%d", i)], want)
		}
	}
	if len(got) != 50 || srv.total() != 50 {
		t.Errorf("%d results from %d requests, want 50 and 50", len(got), srv.total())
	}
	for _, p := range []string{j.out(), j.out() + ".ckpt"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, err %v; want no access for group and others", p, fi.Mode(), err)
		}
	}
}

func TestRunResumeSendsNothingTwice(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{}))
	j := newJob(t, srv, prompts(20)...)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	sum, err := j.run()
	if err != nil {
		t.Fatal(err)
	}
	if srv.total() != 20 || sum.Skipped != 20 || sum.Done != 0 {
		t.Errorf("rerun of a finished job: %d requests in all, summary %+v; want 20 requests and 20 skipped", srv.total(), sum)
	}
	if n := len(lines(t, j.out())); n != 20 {
		t.Errorf("results hold %d lines, want 20", n)
	}
}

func TestRunRecoversLineWrittenBeforeCrash(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{}))
	j := newJob(t, srv, prompts(3)...)
	// A crash after the result line was written but before the checkpoint
	// recorded it, and a torn line after it.
	done := `{"id":"k1","output":"` + mock.Answer("item 1") + `","attempts":1}` + "\n"
	if err := os.WriteFile(j.out(), []byte(done+`{"id":"k2","outp`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	if srv.count("item 1") != 0 || srv.count("item 2") != 1 {
		t.Errorf("requests: item 1 sent %d times, item 2 %d; want 0 and 1", srv.count("item 1"), srv.count("item 2"))
	}
	if n := len(lines(t, j.out())); n != 3 {
		t.Errorf("results hold %d lines, want 3", n)
	}
}

func TestRunBadLinesAndFailures(t *testing.T) {
	srv := newCounting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req llm.ChatRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if strings.Contains(llm.TextContent(req.Messages[len(req.Messages)-1].Content), "refuse") {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"message":"bad thing","code":"invalid_value"}}`)
			return
		}
		r.Body = readCloser{strings.NewReader("")}
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	j := newJob(t, srv,
		`{"id":"a","prompt":"fine"}`,
		`not json`,
		``,
		`{"id":"b","prompt":"refuse me"}`,
		`{"id":"a","prompt":"again"}`,
		`{"id":"c"}`,
	)
	sum, err := j.run()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 1 || sum.Failed != 1 || sum.Bad != 3 || sum.Complete() {
		t.Errorf("summary = %+v, want 1 done, 1 failed, 3 bad", sum)
	}
	errs := lines(t, ErrorsPath(j.out()))
	want := map[string]string{"2": "invalid_input", "4": "bad_request", "5": "invalid_input", "6": "invalid_input"}
	if len(errs) != len(want) {
		t.Fatalf("errors file holds %d lines, want %d: %v", len(errs), len(want), errs)
	}
	for _, e := range errs {
		line := fmt.Sprint(e["line"])
		kind := e["error"].(map[string]any)["kind"]
		if want[line] != kind {
			t.Errorf("errors line for input line %s has kind %v, want %s", line, kind, want[line])
		}
	}
	// A rerun reports nothing new and sends nothing.
	before := srv.total()
	sum, err = j.run()
	if err != nil {
		t.Fatal(err)
	}
	if srv.total() != before || len(lines(t, ErrorsPath(j.out()))) != 4 || sum.Complete() {
		t.Errorf("rerun: %d new requests, %d error lines, complete %v; want 0, 4, false",
			srv.total()-before, len(lines(t, ErrorsPath(j.out()))), sum.Complete())
	}
	// --retry-failed sends the failed item again, and only it.
	if _, err := j.run(func(c *Config) { c.RetryFailed = true }); err != nil {
		t.Fatal(err)
	}
	if srv.total() != before+1 || srv.count("refuse me") != 2 {
		t.Errorf("--retry-failed: %d new requests, want 1 (the failed item)", srv.total()-before)
	}
	if n := len(lines(t, ErrorsPath(j.out()))); n != 4 {
		t.Errorf("errors file holds %d lines after a retry that failed again, want 4 (one per failure)", n)
	}
}

func TestRunRetryFailedThatSucceedsLeavesErrorsClean(t *testing.T) {
	var mu sync.Mutex
	fail := true
	srv := newCounting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			w.WriteHeader(422)
			fmt.Fprint(w, `{"error":{"message":"no"}}`)
			return
		}
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	j := newJob(t, srv, prompts(3)...)
	if sum, _ := j.run(); sum.Failed != 3 {
		t.Fatalf("first run: %d failed, want 3", sum.Failed)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	sum, err := j.run(func(c *Config) { c.RetryFailed = true })
	if err != nil || sum.Done != 3 || !sum.Complete() {
		t.Fatalf("retry run: %+v, %v; want 3 done", sum, err)
	}
	if errs := lines(t, ErrorsPath(j.out())); len(errs) != 0 {
		t.Errorf("errors file still holds %d lines for items that now have results", len(errs))
	}
}

func TestRunRefusesOtherSettings(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{}), prompts(2)...)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	_, err := j.run(func(c *Config) { c.Model = "other" })
	var se *SetupError
	var me *checkpoint.MismatchError
	if !errors.As(err, &se) || !errors.As(err, &me) || !strings.Contains(err.Error(), "model") {
		t.Errorf("rerun with another model: error = %v, want a SetupError naming the model", err)
	}
}

func TestRunRefusesBadPaths(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{}), prompts(1)...)
	tests := map[string]func(*Config){
		"output is input":   func(c *Config) { c.Output = j.input },
		"missing directory": func(c *Config) { c.Output = filepath.Join(j.dir, "nope", "o.jsonl") },
		"output is a dir":   func(c *Config) { c.Output = j.dir },
	}
	for name, mod := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := j.run(mod)
			var se *SetupError
			if !errors.As(err, &se) {
				t.Errorf("error = %v, want *SetupError", err)
			}
		})
	}
}

func TestRunBatchShapedOutput(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{}),
		`{"custom_id":"r-1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-x","messages":[{"role":"user","content":"hello"}]}}`)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, j.out())
	if len(ls) != 1 {
		t.Fatalf("%d lines, want 1", len(ls))
	}
	l := ls[0]
	resp := l["response"].(map[string]any)
	body := resp["body"].(map[string]any)
	content := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	if l["custom_id"] != "r-1" || !strings.HasPrefix(l["id"].(string), "batch_req_") || resp["status_code"].(float64) != 200 ||
		body["model"] != "gpt-x" || content != mock.Answer("hello") || l["error"] != nil {
		t.Errorf("Batch-shaped line = %v", l)
	}
}

func TestRunStopsOnAuth(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{APIKey: "right"}))
	j := newJob(t, srv, prompts(100)...)
	sum, err := j.run(func(c *Config) { c.Concurrency = 2 })
	var se *StopError
	var ae *llm.APIError
	if !errors.As(err, &se) || !errors.As(err, &ae) || ae.Kind != llm.Auth {
		t.Fatalf("error = %v, want a StopError for Auth", err)
	}
	if srv.total() > 4 || sum.Failed != 0 {
		t.Errorf("%d requests sent and %d items failed after a 401; want at most the ones in flight and none recorded", srv.total(), sum.Failed)
	}
}

func TestRunStopIsGraceful(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{Latency: 50 * time.Millisecond}))
	j := newJob(t, srv, prompts(200)...)
	stop := make(chan struct{})
	time.AfterFunc(120*time.Millisecond, func() { close(stop) })
	sum, err := j.run(func(c *Config) { c.Stop = stop })
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error = %v, want ErrInterrupted", err)
	}
	// Every request the server answered was recorded: nothing paid is lost.
	if got := len(lines(t, j.out())); int64(got) != sum.Done || got != srv.total() {
		t.Errorf("%d result lines, %d done, %d requests; want all equal", got, sum.Done, srv.total())
	}
	if sum.Done == 0 || sum.Done == 200 {
		t.Errorf("%d done: the stop should land mid-run", sum.Done)
	}
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	if got := len(lines(t, j.out())); got != 200 || srv.total() != 200 {
		t.Errorf("after resume: %d lines from %d requests, want 200 and 200", got, srv.total())
	}
}

func TestRunCancelKeepsWhatIsWritten(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{Latency: 30 * time.Millisecond}), prompts(200)...)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	sum, err := Run(ctx, j.config())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the context's", err)
	}
	if got := len(lines(t, j.out())); int64(got) != sum.Done {
		t.Errorf("%d result lines for %d done", got, sum.Done)
	}
	d, _, _ := reopenCounts(t, j)
	if int64(d) != sum.Done {
		t.Errorf("checkpoint records %d done, want %d", d, sum.Done)
	}
}

func reopenCounts(t *testing.T, j *job) (done, failed, bad int) {
	t.Helper()
	cfg := j.config()
	cfg.setDefaults()
	jr, err := checkpoint.Open(cfg.Checkpoint, cfg.settings())
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	return jr.Counts()
}

func TestRunLockedCheckpoint(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{}), prompts(1)...)
	cfg := j.config()
	cfg.setDefaults()
	held, err := checkpoint.Open(cfg.Checkpoint, cfg.settings())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = j.run()
	var se *SetupError
	if !errors.As(err, &se) || !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("error = %v, want a SetupError for a locked checkpoint", err)
	}
}

func TestRunFallbackModels(t *testing.T) {
	srv := newCounting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req llm.ChatRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Model {
		case "primary":
			w.WriteHeader(503)
			fmt.Fprint(w, `{"error":{"message":"overloaded"}}`)
		case "gone":
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":{"message":"The model does not exist","code":"model_not_found"}}`)
		default:
			fmt.Fprintf(w, `{"model":%q,"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`, req.Model)
		}
	}))
	j := newJob(t, srv, prompts(3)...)
	sum, err := j.run(func(c *Config) { c.Model, c.Fallbacks = "primary", []string{"gone", "backup"} })
	if err != nil || sum.Done != 3 {
		t.Fatalf("Run() = %+v, %v; want 3 done", sum, err)
	}
	for _, l := range lines(t, j.out()) {
		// 4 attempts on primary (the job's MaxAttempts), 1 on gone, 1 on backup.
		if l["model"] != "backup" || l["attempts"].(float64) != 6 {
			t.Errorf("result %v: want model backup after 6 attempts", l)
		}
	}
}

// TestRunStopWithSilentStdin: a run reading a pipe that stays open and
// silent still returns when the API stops it.
func TestRunStopWithSilentStdin(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{APIKey: "right"}), prompts(1)...)
	pr, pw := io.Pipe()
	defer pw.Close()
	go fmt.Fprintln(pw, `{"id":"a","prompt":"x"}`) // then nothing more, never closed
	cfg := j.config(func(c *Config) { c.Input, c.InputPath = pr, "-" })
	done := make(chan error, 1)
	go func() { _, err := Run(t.Context(), cfg); done <- err }()
	select {
	case err := <-done:
		var se *StopError
		if !errors.As(err, &se) {
			t.Errorf("Run() error = %v, want a StopError", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after a 401 while stdin stayed open")
	}
}

func TestRunRefusedLeavesNoNewFiles(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{}), prompts(1)...)
	notes := filepath.Join(j.dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("my notes, no newline at the end"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := j.run(func(c *Config) { c.Output = notes })
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("Run with a text file as output: error = %v, want a SetupError", err)
	}
	if _, err := os.Stat(notes + ".ckpt"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left %s.ckpt behind", notes)
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes, no newline at the end" {
		t.Errorf("the user's file was changed: %q", b)
	}
}

// TestRunFixedLines: a rejected line fixed in place, or removed so that a
// done line takes its number, no longer counts as rejected after a rerun.
func TestRunFixedLines(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{}))
	j := newJob(t, srv, `{"id":"a","prompt":"one"}`, `not json`, `{"id":"c","prompt":"three"}`, `{"id":"d"}`)
	if sum, _ := j.run(); sum.Bad != 2 {
		t.Fatalf("first run: %d bad lines, want 2", sum.Bad)
	}
	// Line 2 fixed in place; line 4 removed, so nothing is left at line 4.
	fixed := `{"id":"a","prompt":"one"}` + "\n" + `{"id":"b","prompt":"two"}` + "\n" + `{"id":"c","prompt":"three"}` + "\n"
	if err := os.WriteFile(j.input, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := j.run()
	if err != nil || sum.Bad != 0 || sum.Done != 1 {
		t.Fatalf("rerun: %+v, %v; want b answered and no bad line", sum, err)
	}
	js, err := Inspect(j.out(), j.out()+".ckpt")
	if err != nil {
		t.Fatal(err)
	}
	// Line 4 is gone from the input but its rejection stays recorded: a
	// rerun cannot tell a removed line from one not read yet.
	if js.Invalid != 1 || js.Done != 3 {
		t.Errorf("Inspect after fixing line 2: %d invalid, %d done; want 1 (line 4, removed) and 3", js.Invalid, js.Done)
	}
	for _, e := range lines(t, ErrorsPath(j.out())) {
		if e["line"].(float64) == 2 {
			t.Errorf("the errors file still holds line 2: %v", e)
		}
	}
	// Now move a done line onto the number of the removed bad one.
	moved := fixed + `{"id":"e","prompt":"five"}` + "\n"
	if err := os.WriteFile(j.input, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	if js, _ := Inspect(j.out(), j.out()+".ckpt"); js.Invalid != 0 {
		t.Errorf("Inspect after line 4 holds a good record: %d invalid, want 0", js.Invalid)
	}
}

// TestRunRemovedBadLine: a bad line removed, so that a record done earlier
// takes its number, is cleared without sending anything.
func TestRunRemovedBadLine(t *testing.T) {
	srv := newCounting(mock.New(mock.Config{}))
	j := newJob(t, srv, `{"id":"a","prompt":"one"}`, `not json`, `{"id":"c","prompt":"three"}`)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.input, []byte(`{"id":"a","prompt":"one"}`+"\n"+`{"id":"c","prompt":"three"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := srv.total()
	sum, err := j.run()
	if err != nil || !sum.Complete() || srv.total() != before {
		t.Fatalf("rerun: %+v, %v, %d new requests; want complete and nothing sent", sum, err, srv.total()-before)
	}
	if js, _ := Inspect(j.out(), j.out()+".ckpt"); js.Invalid != 0 || js.Done != 2 {
		t.Errorf("Inspect: %d invalid, %d done; want 0 and 2", js.Invalid, js.Done)
	}
	if errs := lines(t, ErrorsPath(j.out())); len(errs) != 0 {
		t.Errorf("errors file still holds %v", errs)
	}
}
