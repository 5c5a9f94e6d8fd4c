package cmd_test

import (
	"math/rand/v2"
	"path/filepath"
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
	prompts := writeInput(t, in, 5000)
	args := runArgs(srv.base(), out, in, "-j", "16", "--max-attempts", "10", "--base-delay", "1ms", "--max-delay", "20ms", "-q")
	env := childEnv()

	killed, lostAll := 0, 0
	for run := 1; ; run++ {
		before := srv.oks200()
		p := start(t, dir, env, nil, args...)
		if killed < kills {
			d := 150*time.Millisecond + time.Duration(rng.Int64N(int64(350*time.Millisecond)))
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
	c := make(map[string]int, len(s.oks))
	for k, v := range s.oks {
		c[k] = v
	}
	return c
}
