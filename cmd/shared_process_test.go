package cmd_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmbatch/llmbatch/internal/redistest"
	"github.com/llmbatch/llmbatch/llm/mock"
)

const sharedKey = "sk-test-SHAREDKEY-0123456789"

// runShared starts jobs llmbatch processes of n items each against srv,
// sharing the key's limits through rs, and returns them with their inputs.
func runShared(t *testing.T, srv *server, rs *redistest.Server, jobs, n int, extra ...string) ([]*proc, []map[string]string, []string) {
	t.Helper()
	var procs []*proc
	var prompts []map[string]string
	var outs []string
	for range jobs {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		p := writeInput(t, in, n)
		// Each job's own ids: the jobs are different jobs on one key.
		args := append([]string{"--redis", rs.URL(""), "-j", "8", "--max-attempts", "3", "--base-delay", "100ms"}, extra...)
		procs = append(procs, start(t, dir, childEnv("LLMBATCH_API_KEY="+sharedKey), nil,
			runArgs(srv.base(), "out.jsonl", "in.jsonl", args...)...))
		prompts = append(prompts, p)
		outs = append(outs, filepath.Join(dir, "out.jsonl"))
	}
	return procs, prompts, outs
}

// TestSharedLimits runs three processes on one key against a server
// allowing 20 requests a second, sharing through a real redis-server: told
// the key's limit, they keep to it together (a 429 now and then at most);
// with Redis killed and restarted mid-run, every process still finishes
// every item; and no Redis name or value holds the key.
func TestSharedLimits(t *testing.T) {
	binary(t)
	t.Run("told the key's limit", func(t *testing.T) {
		rs := redistest.Start(t)
		srv := newServer(t, mock.Config{RPM: 20, Window: time.Second, NoLimitHeaders: true}, nil)
		procs, prompts, outs := runShared(t, srv, rs, 3, 60, "--rpm", "1200")
		for i, p := range procs {
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("job %d: exit %d\n%s", i+1, code, p.stderr.String())
			}
			checkComplete(t, outs[i], prompts[i])
		}
		st := srv.mock.Stats()
		// Alone, each would send at the whole 20/s: about 2 in 3 refused.
		if st.RateLimited*20 > st.Requests {
			t.Errorf("the server refused %d of %d requests, want under 5%%: the jobs did not share the limit", st.RateLimited, st.Requests)
		}
		checkNoKeyInRedis(t, rs)
	})
	t.Run("redis away mid-run", func(t *testing.T) {
		rs := redistest.Start(t)
		srv := newServer(t, mock.Config{RPM: 20, Window: time.Second, NoLimitHeaders: true}, nil)
		procs, prompts, outs := runShared(t, srv, rs, 3, 60, "--rpm", "1200")
		time.Sleep(1500 * time.Millisecond)
		rs.Stop()
		time.Sleep(2 * time.Second)
		rs.Restart()
		for i, p := range procs {
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("job %d: exit %d\n%s", i+1, code, p.stderr.String())
			}
			checkComplete(t, outs[i], prompts[i])
			if errs := p.stderr.String(); strings.Count(errs, "redis is away") != 1 {
				t.Errorf("job %d warned %d times that redis is away, want once:\n%s", i+1, strings.Count(errs, "redis is away"), errs)
			}
		}
		checkNoKeyInRedis(t, rs)
	})
}

func TestRedisURLRefused(t *testing.T) {
	binary(t)
	rs := redistest.Start(t, "--requirepass", "PWSECRET-redis")
	dir := t.TempDir()
	writeInput(t, filepath.Join(dir, "in.jsonl"), 1)
	srv := newServer(t, mock.Config{}, nil)
	for _, url := range []string{"redis://:wrong@" + rs.Addr + "/0", "http://" + rs.Addr, "redis://127.0.0.1:1/0"} {
		p := start(t, dir, childEnv("LLMBATCH_API_KEY="+sharedKey), nil, runArgs(srv.base(), "out.jsonl", "in.jsonl", "--redis", url)...)
		if code := p.wait(t, 30*time.Second); code != 2 {
			t.Errorf("--redis %s: exit %d, want 2\n%s", url, code, p.stderr.String())
		}
	}
	if n := srv.mock.Stats().Requests; n != 0 {
		t.Errorf("the server got %d requests with a bad --redis, want none", n)
	}
	p := start(t, dir, childEnv("LLMBATCH_API_KEY="+sharedKey), nil,
		runArgs(srv.base(), "out.jsonl", "in.jsonl", "--redis", "redis://:PWSECRET-redis@"+rs.Addr+"/0")...)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Errorf("with the right password: exit %d\n%s", code, p.stderr.String())
	}
	checkNoSecrets(t, dir, map[string][]byte{"stderr": p.stderr.Bytes()})
	for _, name := range []string{"out.jsonl.ckpt", "out.jsonl"} {
		b := readFile(t, filepath.Join(dir, name))
		if strings.Contains(string(b), "PWSECRET") {
			t.Errorf("%s holds the redis password", name)
		}
	}
}

// checkNoKeyInRedis scans every name and value in Redis for the key, and
// checks that names ending in each of want are among them.
func checkNoKeyInRedis(t *testing.T, rs *redistest.Server, want ...string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("KEYS * = %v, %v; want the shared lane's names", keys, err)
	}
	for _, w := range want {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, w) }) {
			t.Errorf("no Redis name ends in %q among %v", w, keys)
		}
	}
	for _, k := range keys {
		v, _ := rdb.Dump(ctx, k).Result()
		if strings.Contains(k+v, sharedKey) || strings.Contains(k+v, "SHAREDKEY") {
			t.Errorf("Redis %q holds the API key", k)
		}
	}
}

// TestDryRunSaysLimitsAreShared: a dry run with --redis says the limits
// are the key's, shared (and the shared cap on requests in flight), and
// shows the URL without its password.
func TestDryRunSaysLimitsAreShared(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	writeInput(t, filepath.Join(dir, "in.jsonl"), 2)
	p := start(t, dir, childEnv(), nil, "run", "--provider", "mock", "--dry-run", "--redis", "redis://:PWSECRET-x@127.0.0.1:1/0", "--shared-concurrency", "5", "in.jsonl")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	out := p.stdout.String()
	if !strings.Contains(out, "shared through redis://:xxxxx@127.0.0.1:1/0") || !strings.Contains(out, "5 requests in flight at most among them") {
		t.Errorf("dry run does not say the limits are shared:\n%s", out)
	}
	if strings.Contains(out+p.stderr.String(), "PWSECRET") {
		t.Errorf("dry run shows the redis password:\n%s", out)
	}
}

// TestSharedConcurrency: --shared-concurrency caps the requests in flight
// of every process on the key together, and the slots of a process killed
// with SIGKILL come back once its leases lapse, so that the next job goes
// on; without --redis it is a usage error.
func TestSharedConcurrency(t *testing.T) {
	binary(t)
	rs := redistest.Start(t)
	srv := newServer(t, mock.Config{}, nil)
	srv.delay.Store(int64(50 * time.Millisecond))
	t.Run("the cap holds across processes", func(t *testing.T) {
		stop := sampleInFlight(srv)
		procs, prompts, outs := runShared(t, srv, rs, 3, 20, "--shared-concurrency", "3")
		for i, p := range procs {
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("job %d: exit %d\n%s", i+1, code, p.stderr.String())
			}
			checkComplete(t, outs[i], prompts[i])
			if !strings.Contains(p.stderr.String(), "3 requests in flight at most among them") {
				t.Errorf("job %d's summary does not mention the shared cap:\n%s", i+1, p.stderr.String())
			}
		}
		// Each alone may have 8 in flight: 24 between them without the cap.
		if n := stop(); n > 3 || n < 2 {
			t.Errorf("the server saw up to %d requests in flight, want 3 at most (and the cap reached)", n)
		}
		checkNoKeyInRedis(t, rs)
	})
	t.Run("a killed process's slots come back", func(t *testing.T) {
		srv.hang.Store(true)
		a, _, _ := runShared(t, srv, rs, 1, 10, "--shared-concurrency", "2")
		if !waitFor(30*time.Second, func() bool { return srv.inflight.Load() == 2 }) {
			t.Fatalf("the server has %d requests in flight, want the 2 slots taken\n%s", srv.inflight.Load(), a[0].stderr.String())
		}
		killed := time.Now()
		a[0].signal(t, syscall.SIGKILL)
		a[0].wait(t, 10*time.Second)
		checkNoKeyInRedis(t, rs, ":leases") // the dead one's leases, still held
		srv.hang.Store(false)
		before := srv.total.Load()
		b, prompts, outs := runShared(t, srv, rs, 1, 10, "--shared-concurrency", "2")
		// The dead process's leases hold the slots for seconds yet: renewed
		// every 2 s for 6 s, they hold for 4 s after the kill at least (a
		// loaded machine may take longer than that to start the next job).
		time.Sleep(time.Second)
		if n := srv.total.Load() - before; n != 0 && time.Since(killed) < 4*time.Second {
			t.Errorf("%d requests sent while a killed process's leases still held every slot, want none", n)
		}
		if code := b[0].wait(t, time.Minute); code != 0 {
			t.Fatalf("exit %d after the killed process's slots lapsed\n%s", code, b[0].stderr.String())
		}
		checkComplete(t, outs[0], prompts[0])
		checkNoKeyInRedis(t, rs)
	})
	t.Run("without --redis", func(t *testing.T) {
		dir := t.TempDir()
		writeInput(t, filepath.Join(dir, "in.jsonl"), 1)
		p := start(t, dir, childEnv("LLMBATCH_API_KEY="+sharedKey), nil,
			runArgs(srv.base(), "out.jsonl", "in.jsonl", "--shared-concurrency", "2")...)
		if code := p.wait(t, 30*time.Second); code != 2 || !strings.Contains(p.stderr.String(), "give --redis") {
			t.Errorf("--shared-concurrency without --redis: exit %d, want 2 saying to give --redis\n%s", code, p.stderr.String())
		}
	})
}

// sampleInFlight samples the server's requests in flight every
// millisecond until the returned func is called; it returns the most seen.
func sampleInFlight(srv *server) (stop func() int64) {
	var most int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				most = max(most, srv.inflight.Load())
			}
		}
	})
	return func() int64 { close(done); wg.Wait(); return most }
}

// TestBatchAPISharesLimits: --redis applies with --batch-api too, whose
// requests sent online share the key's limits: a URL that cannot be used
// is refused (exit 2) before anything is uploaded, and with one that can,
// the run completes and its summary says the limits were shared.
func TestBatchAPISharesLimits(t *testing.T) {
	binary(t)
	rs := redistest.Start(t)
	srv := newAPIServer(t, mock.BatchConfig{Delay: 50 * time.Millisecond})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	prompts := writeInput(t, in, 5)
	env := childEnv("LLMBATCH_API_KEY=" + sharedKey)
	p := start(t, dir, env, nil, batchArgs(srv.URL+"/v1", out, in, "--redis", "redis://127.0.0.1:1/0")...)
	if code := p.wait(t, 30*time.Second); code != 2 {
		t.Errorf("--batch-api with a --redis nobody answers: exit %d, want 2\n%s", code, p.stderr.String())
	}
	if st := srv.h.BatchStats(); st.Batches != 0 {
		t.Errorf("BatchStats %+v after a refused --redis, want no batch", st)
	}
	p = start(t, dir, env, nil, batchArgs(srv.URL+"/v1", out, in, "--redis", rs.URL(""))...)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("--batch-api with --redis: exit %d\n%s", code, p.stderr.String())
	}
	checkComplete(t, out, prompts)
	if !strings.Contains(p.stderr.String(), "limits shared through redis://") {
		t.Errorf("the summary does not say the limits were shared:\n%s", p.stderr.String())
	}
}
