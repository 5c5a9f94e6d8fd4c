package cmd_test

import (
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestKillLosesOnlyRequestsInFlight kills `llmbatch run -j 16` with SIGKILL
// at random moments, five times, rerunning the same command each time, and
// counts at the server the items answered (a 200 sent) whose answer did not
// reach the results file: each is paid for twice. Answers are handed to the
// OS as they arrive and fsync runs beside them, so a kill can lose at most
// the 16 requests in flight, never the answers that came in during a
// commit.
func TestKillLosesOnlyRequestsInFlight(t *testing.T) {
	const j, kills = 16, 5
	binary(t)
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, sd>>1))
	srv := newServer(t, mock.Config{Latency: 3 * time.Millisecond, Jitter: 6 * time.Millisecond, Seed: sd}, nil)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	prompts := writeInput(t, in, 8000)
	args := runArgs(srv.base(), out, in, "-j", "16", "--max-attempts", "10", "--base-delay", "1ms", "--max-delay", "20ms", "-q")
	env := childEnv()

	killed, lostAll := 0, 0
	for run := 1; ; run++ {
		before := srv.oks200()
		p := start(t, dir, env, nil, args...)
		if killed < kills {
			d := 100*time.Millisecond + time.Duration(rng.Int64N(int64(250*time.Millisecond)))
			if !killWhen(p, d, "") {
				t.Fatalf("run %d ended by itself before its kill: raise the input's size\nstderr:\n%s", run, p.stderr.String())
			}
			killed++
			srv.quiesce(t)
			// Answered in this run, and not in the results file: lost.
			durable, _, _ := readResults(t, out)
			after, lost := srv.oks200(), 0
			for id, prompt := range prompts {
				if _, ok := durable[id]; !ok && after[prompt] > before[prompt] {
					lost++
				}
			}
			t.Logf("kill %d: %d items answered and lost", killed, lost)
			if lost > j {
				t.Errorf("kill %d lost %d answered items, want at most %d (the requests in flight)", killed, lost, j)
			}
			lostAll += lost
			continue
		}
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("run %d: exit code %d, want 0\nstderr:\n%s", run, code, p.stderr.String())
		}
		srv.quiesce(t)
		break
	}
	checkComplete(t, out, prompts)
	twice := 0
	for _, n := range srv.oks200() {
		twice += max(0, n-1)
	}
	t.Logf("%d kills at -j %d: %d items answered twice (bound %d)", killed, j, twice, j*killed)
	if twice > j*killed || twice != lostAll {
		t.Errorf("%d answers paid twice over %d kills (%d counted lost at the kills); want at most %d, and equal",
			twice, killed, lostAll, j*killed)
	}
}

// oks200 returns a copy of the 200s answered per prompt.
func (s *server) oks200() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.oks)
}

// TestOutageExit3ThenResume: the server refuses connections mid-run for
// 1.5 times --break-after (as 30 s do for --break-after 20s; scaled down
// to keep the test short). The run exits 3 with no item recorded as
// failed, though items ran out of attempts on the refusals before the
// breaker tripped; the same command afterwards, without --retry-failed,
// finishes every item.
func TestOutageExit3ThenResume(t *testing.T) {
	binary(t)
	const breakAfter = 300 * time.Millisecond
	srv := &server{mock: mock.New(mock.Config{Latency: 3 * time.Millisecond}),
		reqs: map[string]int{}, oks: map[string]int{}, auth: map[string]int{}}
	fs := &flaky{t: t, h: srv, addr: "127.0.0.1:0"}
	fs.up()
	t.Cleanup(fs.down)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	prompts := writeInput(t, in, 600)
	args := runArgs("http://"+fs.addr+"/v1", out, in, "-j", "4", "--max-attempts", "4",
		"--base-delay", "30ms", "--max-delay", "60ms", "--break-after", breakAfter.String(), "-q")
	p := start(t, dir, childEnv(), nil, args...)
	if !waitFor(20*time.Second, func() bool { return len(srv.answered()) >= 60 }) {
		t.Fatalf("the run did not get 60 answers\nstderr:\n%s", p.stderr.String())
	}
	fs.down()
	downAt := time.Now()
	if code := p.wait(t, 20*time.Second); code != 3 {
		t.Fatalf("run with the server down: exit code %d, want 3\nstderr:\n%s", code, p.stderr.String())
	}
	if errs := lines(t, filepath.Join(dir, "out.errors.jsonl")); len(errs) > 0 {
		t.Errorf("the outage left %d items recorded as failed, e.g. %s; want none", len(errs), errs[0])
	}
	time.Sleep(time.Until(downAt.Add(breakAfter * 3 / 2)))
	fs.up()
	p = start(t, dir, childEnv(), nil, args...)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("the same command after the outage: exit code %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	checkComplete(t, out, prompts)
	if errs := lines(t, filepath.Join(dir, "out.errors.jsonl")); len(errs) > 0 {
		t.Errorf("errors file has %d lines after the rerun, e.g. %s", len(errs), errs[0])
	}
}

// flaky serves h on one loopback port that can be taken down (listener and
// connections closed: dials are refused) and brought up again on the same
// port.
type flaky struct {
	t    *testing.T
	h    http.Handler
	addr string
	srv  *http.Server
	wg   sync.WaitGroup
}

func (f *flaky) up() {
	f.t.Helper()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatalf("listen on %s: %v", f.addr, err)
	}
	f.addr = ln.Addr().String()
	srv := &http.Server{Handler: f.h}
	f.srv = srv
	f.wg.Go(func() { srv.Serve(ln) })
}

func (f *flaky) down() {
	if f.srv != nil {
		f.srv.Close()
		f.wg.Wait()
		f.srv = nil
	}
}

// TestServerDownToTheEndExit3ThenResume: the server fails every request
// (500) for the whole of a short job, or nothing listens at all. No item is
// recorded as failed: no answer of the server came after they were sent.
// The run exits 3 (resumable), and the same command once the server
// answers, without --retry-failed, finishes every item.
func TestServerDownToTheEndExit3ThenResume(t *testing.T) {
	binary(t)
	for _, tc := range []struct {
		name    string
		refused bool // nothing listens on the port until the server is up
	}{{"every request 500", false}, {"nothing listening", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var up atomic.Bool
			srv := &server{mock: mock.New(mock.Config{}), reqs: map[string]int{}, oks: map[string]int{}, auth: map[string]int{},
				script: func(string, int) *reply {
					if up.Load() {
						return nil
					}
					return errorReply(500, "server_error", "down")
				}}
			fs := &flaky{t: t, h: srv, addr: "127.0.0.1:0"}
			fs.up()
			t.Cleanup(fs.down)
			if tc.refused {
				fs.down()
			}
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
			prompts := writeInput(t, in, 8)
			args := runArgs("http://"+fs.addr+"/v1", out, in, "--max-attempts", "3", "--base-delay", "20ms", "--max-delay", "40ms", "-q")
			p := start(t, dir, childEnv(), nil, args...)
			if code := p.wait(t, 20*time.Second); code != 3 {
				t.Fatalf("run with the server down: exit code %d, want 3\nstderr:\n%s", code, p.stderr.String())
			}
			if errs := lines(t, filepath.Join(dir, "out.errors.jsonl")); len(errs) > 0 {
				t.Fatalf("the server being down left %d items recorded as failed, e.g. %s; want none", len(errs), errs[0])
			}
			up.Store(true)
			if tc.refused {
				fs.up()
			}
			p = start(t, dir, childEnv(), nil, args...)
			if code := p.wait(t, 20*time.Second); code != 0 {
				t.Fatalf("the same command with the server up: exit code %d, want 0\nstderr:\n%s", code, p.stderr.String())
			}
			checkComplete(t, out, prompts)
		})
	}
}
