package cmd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// apiServer is the mock's Files and Batch API over HTTP, outliving the
// child processes that use it, with a trap: the first request that kill
// matches (after skip earlier matches) is handed to the mock and then,
// before its answer goes back, the child is SIGKILLed. It counts the
// creates of each shard (by the batch's llmbatch_shard metadata).
type apiServer struct {
	*httptest.Server
	h *mock.Handler

	mu      sync.Mutex
	victim  *proc
	kill    func(r *http.Request) bool
	skip    int  // matches to let through first
	half    bool // answer half of the trapped response's body, then kill
	before  bool // kill before the mock sees the trapped request
	fired   bool
	creates map[string]int
}

func newAPIServer(t *testing.T, bc mock.BatchConfig) *apiServer {
	s := &apiServer{h: mock.New(mock.Config{Batch: bc, Seed: 3}), creates: map[string]int{}}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	victim := s.trapped(r)
	if victim != nil && s.before {
		victim.cmd.Process.Kill()
		<-victim.done
		return // the mock never saw it
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/batches") {
		var req struct{ Metadata map[string]string }
		json.Unmarshal(body, &req)
		s.mu.Lock()
		s.creates[req.Metadata["llmbatch_shard"]]++
		s.mu.Unlock()
	}
	if victim != nil {
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, r)
		if s.half {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
		victim.cmd.Process.Kill()
		<-victim.done
		return
	}
	s.h.ServeHTTP(w, r)
}

// trapped returns the child to kill when r is the trapped request.
func (s *apiServer) trapped(r *http.Request) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fired || s.kill == nil || s.victim == nil || !s.kill(r) {
		return nil
	}
	if s.skip > 0 {
		s.skip--
		return nil
	}
	s.fired = true
	return s.victim
}

// arm sets the trap for the child p.
func (s *apiServer) arm(p *proc, skip int, half, before bool, kill func(*http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.victim, s.skip, s.half, s.before, s.kill, s.fired = p, skip, half, before, kill, false
}

// twice returns the shards created more than once.
func (s *apiServer) twice() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, n := range s.creates {
		if n > 1 {
			out[k] = n
		}
	}
	return out
}

func route(method, suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && strings.HasSuffix(r.URL.Path, suffix)
	}
}

func isPoll(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/batches/batch_")
}

func batchArgs(base, out, in string, extra ...string) []string {
	return runArgs(base, out, in, append([]string{"--batch-api", "--batch-api-max-requests", "10",
		"--poll-every", "20ms", "--batch-api-settle", "200ms"}, extra...)...)
}

// TestBatchAPIKill: a --batch-api job of three shards is SIGKILLed at each
// point where a crash could submit or write twice, then run again: every
// item has exactly one result, and no shard was created twice at the
// server.
func TestBatchAPIKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	for _, tc := range []struct {
		name         string
		skip         int
		half, before bool
		kill         func(*http.Request) bool
	}{
		{"after upload, before its record", 1, false, false, route(http.MethodPost, "/files")},
		{"after upload, before create", 1, false, true, route(http.MethodPost, "/batches")},
		{"after create, before its record", 1, false, false, route(http.MethodPost, "/batches")},
		{"while polling", 4, false, false, isPoll},
		{"during download", 1, true, false, route(http.MethodGet, "/content")},
		{"during write", 1, false, false, route(http.MethodGet, "/content")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newAPIServer(t, mock.BatchConfig{Delay: 50 * time.Millisecond})
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
			prompts := writeInput(t, in, 25)
			args := batchArgs(srv.URL+"/v1", out, in)
			p := start(t, dir, childEnv(), nil, args...)
			srv.arm(p, tc.skip, tc.half, tc.before, tc.kill)
			if code := p.wait(t, 30*time.Second); code != -1 {
				t.Fatalf("first run exit %d, want killed; stderr:\n%s", code, p.stderr.String())
			}
			srv.arm(nil, 0, false, false, nil)
			p2 := start(t, dir, childEnv(), nil, args...)
			if code := p2.wait(t, 30*time.Second); code != 0 {
				t.Fatalf("rerun exit %d, want 0; stderr:\n%s", code, p2.stderr.String())
			}
			checkComplete(t, out, prompts)
			if tw := srv.twice(); len(tw) > 0 {
				t.Errorf("shards created twice at the server: %v", tw)
			}
			if st := srv.h.BatchStats(); st.Batches != 3 {
				t.Errorf("BatchStats %+v: want 3 batches, one per shard", st)
			}
		})
	}
}

// TestBatchAPINoWait: --no-wait submits and exits 4 while the batches are
// at the provider; the same command run again (as cron would) collects
// them, exiting 4 until the last is in, then 0.
func TestBatchAPINoWait(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	srv := newAPIServer(t, mock.BatchConfig{Delay: 300 * time.Millisecond})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	prompts := writeInput(t, in, 25)
	args := batchArgs(srv.URL+"/v1", out, in, "--no-wait")
	codes := []int{}
	for len(codes) < 50 {
		p := start(t, dir, childEnv(), nil, args...)
		code := p.wait(t, 30*time.Second)
		codes = append(codes, code)
		if code != 4 {
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(codes) < 2 || codes[0] != 4 || codes[len(codes)-1] != 0 {
		t.Fatalf("exit codes %v: want 4 first, then 0 once collected", codes)
	}
	checkComplete(t, out, prompts)
	if st := srv.h.BatchStats(); st.Batches != 3 || len(srv.twice()) > 0 {
		t.Errorf("BatchStats %+v, created twice %v: want 3 batches, each created once", st, srv.twice())
	}
	// A run with nothing left exits 0 and creates nothing.
	p := start(t, dir, childEnv(), nil, args...)
	if code := p.wait(t, 30*time.Second); code != 0 || srv.h.BatchStats().Batches != 3 {
		t.Errorf("run after the end: exit %d, %d batches; want 0 and still 3", code, srv.h.BatchStats().Batches)
	}
}

// TestBatchAPICancel: `llmbatch cancel` cancels the job's batches at the
// provider and says so in status; a rerun collects what they finished and
// resubmits the rest, so every item ends with one result.
func TestBatchAPICancel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	srv := newAPIServer(t, mock.BatchConfig{Delay: 50 * time.Millisecond, LineTime: 100 * time.Millisecond})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	prompts := writeInput(t, in, 25)
	args := batchArgs(srv.URL+"/v1", out, in)
	p := start(t, dir, childEnv(), nil, append(args, "--no-wait")...)
	if code := p.wait(t, 30*time.Second); code != 4 {
		t.Fatalf("--no-wait: exit %d, want 4; stderr:\n%s", code, p.stderr.String())
	}
	time.Sleep(250 * time.Millisecond) // some lines finish
	c := start(t, dir, childEnv(), nil, "cancel", "--base-url", srv.URL+"/v1", "--model", "m", out)
	if code := c.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("cancel: exit %d; stderr:\n%s", code, c.stderr.String())
	}
	if !strings.Contains(c.stdout.String(), "cancel") {
		t.Errorf("cancel listed no cancelled shard:\n%s", c.stdout.String())
	}
	st := start(t, dir, childEnv(), nil, "status", out)
	st.wait(t, 30*time.Second)
	if !strings.Contains(st.stdout.String(), "batch_mock_1") {
		t.Errorf("status lists no shard:\n%s", st.stdout.String())
	}
	p2 := start(t, dir, childEnv(), nil, args...)
	if code := p2.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("rerun after cancel: exit %d; stderr:\n%s", code, p2.stderr.String())
	}
	checkComplete(t, out, prompts)
	if st := srv.h.BatchStats(); st.Batches <= 3 || len(srv.twice()) > 0 {
		t.Errorf("BatchStats %+v, created twice %v: want more than 3 (what the cancel left, resubmitted), none twice", st, srv.twice())
	}
}
