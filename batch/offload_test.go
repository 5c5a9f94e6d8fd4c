package batch

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// apiJob is a Batch API test job against the mock over HTTP.
type apiJob struct {
	*job
	h *mock.Handler
}

func newAPIJob(t *testing.T, bc mock.BatchConfig, lines ...string) *apiJob {
	t.Helper()
	if bc.Delay == 0 {
		bc.Delay = 20 * time.Millisecond
	}
	h := mock.New(mock.Config{Batch: bc, Seed: 7})
	return &apiJob{job: newJob(t, h, lines...), h: h}
}

func fastAPI(mod ...func(*BatchAPIConfig)) BatchAPIConfig {
	a := BatchAPIConfig{PollEvery: 10 * time.Millisecond, Settle: 50 * time.Millisecond}
	for _, m := range mod {
		m(&a)
	}
	return a
}

func (j *apiJob) runAPI(api BatchAPIConfig, mod ...func(*Config)) (*APISummary, error) {
	j.t.Helper()
	cfg := j.config(mod...)
	cfg.Logger = slog.New(slog.NewTextHandler(tlog{j.t}, nil))
	return RunBatchAPI(j.t.Context(), cfg, api)
}

// tlog writes a test's log lines.
type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// ids counts the lines of a results or errors file by id (or custom_id).
func ids(t *testing.T, path string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, l := range lines(t, path) {
		id, _ := l["id"].(string)
		if c, ok := l["custom_id"].(string); ok {
			id = c
		}
		n[id]++
	}
	return n
}

// exactlyOnce checks that each of the n prompts has one line, in the
// results or the errors file, and none has two.
func exactlyOnce(t *testing.T, j *job, n int) (results, errs map[string]int) {
	t.Helper()
	results, errs = ids(t, j.out()), ids(t, ErrorsPath(j.out()))
	for i := range n {
		id := fmt.Sprintf("k%d", i)
		if results[id]+errs[id] != 1 {
			t.Errorf("%s: %d result lines and %d errors lines, want one in all", id, results[id], errs[id])
		}
	}
	return results, errs
}

// TestBatchAPISeveralShards: a job cut into three shards by the request
// limit and then the byte limit is uploaded, created, polled and collected
// against the mock: one result per item, each shard created once, every
// result matched to its item, and the shard files removed once done.
func TestBatchAPISeveralShards(t *testing.T) {
	for _, tc := range []struct {
		name string
		mock mock.BatchConfig
		api  func(*BatchAPIConfig)
	}{
		{"requests", mock.BatchConfig{MaxRequests: 10}, func(a *BatchAPIConfig) { a.MaxRequests = 10 }},
		{"bytes", mock.BatchConfig{MaxBytes: 1200}, func(a *BatchAPIConfig) { a.MaxBytes = 1200 }}, // 95%: 1140 bytes, about 10 lines
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newAPIJob(t, tc.mock, prompts(25)...)
			s, err := j.runAPI(fastAPI(tc.api))
			if err != nil {
				t.Fatalf("RunBatchAPI = %v", err)
			}
			exactlyOnce(t, j.job, 25)
			st := j.h.BatchStats()
			if st.Batches < 2 || int(st.Batches) != len(s.Shards) || s.Created != len(s.Shards) {
				t.Errorf("batches created at the server %d, shards %d, Created %d: want equal, and at least 2", st.Batches, len(s.Shards), s.Created)
			}
			for _, sh := range s.Shards {
				if sh.Phase != batchapi.Finished || sh.Status != batchapi.StatusCompleted {
					t.Errorf("shard %d: phase %v status %s, want finished and completed", sh.N, sh.Phase, sh.Status)
				}
			}
			if s.Done != 25 || s.Submitted != 25 {
				t.Errorf("Done %d, Submitted %d; want 25, 25", s.Done, s.Submitted)
			}
			for _, l := range lines(t, j.out()) {
				if out, _ := l["output"].(string); !strings.Contains(out, "item") {
					t.Errorf("result %v: output does not echo its prompt", l)
				}
			}
			left, _ := filepath.Glob(filepath.Join(ShardDir(j.out()), "*"))
			if len(left) > 0 {
				t.Errorf("shard files left after the job: %v", left)
			}
			// A rerun has nothing to do: no file, no batch.
			if _, err := j.runAPI(fastAPI(tc.api)); err != nil {
				t.Fatal(err)
			}
			if st2 := j.h.BatchStats(); st2 != st {
				t.Errorf("rerun of a finished job: stats %+v, want %+v unchanged", st2, st)
			}
		})
	}
}

// TestBatchAPIBatchLines: OpenAI Batch input lines give Batch-shaped
// output lines, keyed by their own custom_id.
func TestBatchAPIBatchLines(t *testing.T) {
	var in []string
	for i := range 5 {
		in = append(in, fmt.Sprintf(`{"custom_id":"k%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"item %d"}]}}`, i, i))
	}
	j := newAPIJob(t, mock.BatchConfig{}, in...)
	if _, err := j.runAPI(fastAPI()); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, j.job, 5)
	for _, l := range lines(t, j.out()) {
		resp, _ := l["response"].(map[string]any)
		if resp == nil || resp["status_code"] != float64(200) || resp["body"] == nil {
			t.Errorf("result %v is not Batch-shaped", l)
		}
	}
}

// TestBatchAPIDoneOnlineNeverInShard: items answered online before are not
// put into a shard; rejected lines go to the errors file once.
func TestBatchAPIDoneOnlineNeverInShard(t *testing.T) {
	in := append(prompts(6), `not json`)
	j := newAPIJob(t, mock.BatchConfig{}, in[:3]...)
	if _, err := j.run(); err != nil { // online, the first three
		t.Fatal(err)
	}
	os.WriteFile(j.input, []byte(strings.Join(in, "\n")+"\n"), 0o644)
	s, err := j.runAPI(fastAPI())
	if err != nil {
		t.Fatal(err)
	}
	if s.Submitted != 3 || s.Skipped != 3 {
		t.Errorf("Submitted %d, Skipped %d; want 3 and 3 (the items done online stay out of shards)", s.Submitted, s.Skipped)
	}
	_, errs := exactlyOnce(t, j.job, 6)
	if len(errs) != 1 {
		t.Errorf("errors file: %v, want the one rejected line", errs)
	}
}

// TestBatchAPILineErrors: injected 5xx lines are retryable and go into a
// later shard; their second failure, with the fallback none, is reported;
// with the fallback online they are answered online. Bodies the provider
// refuses (a 400 line) are permanent and go to the errors file at once.
func TestBatchAPILineErrors(t *testing.T) {
	in := prompts(30)
	in = append(in, `{"id":"bad","prompt":"x","params":{"max_tokens":0}}`)
	for _, fb := range []batchapi.Fallback{batchapi.FallbackNone, batchapi.FallbackOnline} {
		t.Run(fmt.Sprint(fb), func(t *testing.T) {
			j := newAPIJob(t, mock.BatchConfig{FailRate: 0.3}, in...)
			s, err := j.runAPI(fastAPI(func(a *BatchAPIConfig) { a.Fallback = fb }))
			if err != nil {
				t.Fatal(err)
			}
			results, errs := exactlyOnce(t, j.job, 30)
			rounds := map[int]int{}
			for _, sh := range s.Shards {
				rounds[sh.Round]++
			}
			if rounds[1] != 1 || rounds[2] != 0 {
				t.Errorf("shards by round %v: want one resubmission, once", rounds)
			}
			if errs["bad"] != 1 {
				t.Errorf("the line the provider refuses (400): %d errors lines, want 1", errs["bad"])
			}
			if fb == batchapi.FallbackOnline && len(results) != 30 {
				t.Errorf("with the online fallback, %d results, want all 30", len(results))
			}
			if fb == batchapi.FallbackNone && len(results)+len(errs) != 31 {
				t.Errorf("%d results and %d errors, want 31 in all", len(results), len(errs))
			}
			t.Logf("results %d, errors %d, shards %d", len(results), len(errs), len(s.Shards))
		})
	}
}

// TestBatchAPIExpiry: a batch that expires keeps its finished lines; the
// rest are resubmitted (and expire again here: then reported).
func TestBatchAPIExpiry(t *testing.T) {
	j := newAPIJob(t, mock.BatchConfig{LineTime: 20 * time.Millisecond, Expire: 200 * time.Millisecond}, prompts(20)...)
	s, err := j.runAPI(fastAPI())
	if err != nil {
		t.Fatal(err)
	}
	results, errs := exactlyOnce(t, j.job, 20)
	if len(results) == 0 || len(errs) == 0 {
		t.Errorf("%d results, %d errors: want the lines finished before expiry kept, the rest reported", len(results), len(errs))
	}
	for _, l := range lines(t, ErrorsPath(j.out())) {
		if e, _ := l["error"].(map[string]any); e["code"] != "batch_expired" {
			t.Errorf("errors line %v: want code batch_expired", l)
		}
	}
	if s.Complete() {
		t.Error("Complete() with reported lines")
	}
}

// TestBatchAPIModels: a batch takes one model, so items of two models go
// into shards of their own, and none fails for mixing them.
func TestBatchAPIModels(t *testing.T) {
	var in []string
	for i := range 8 {
		in = append(in, fmt.Sprintf(`{"id":"k%d","prompt":"item %d","model":"m%d"}`, i, i, i/3))
	}
	j := newAPIJob(t, mock.BatchConfig{}, in...)
	s, err := j.runAPI(fastAPI())
	if err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, j.job, 8)
	if len(s.Shards) != 3 {
		t.Errorf("%d shards, want 3: one for each model's run of items", len(s.Shards))
	}
	for _, sh := range s.Shards {
		if sh.Status != batchapi.StatusCompleted || sh.Round != 0 {
			t.Errorf("shard %d: %s, round %d; want completed in round 0", sh.N, sh.Status, sh.Round)
		}
	}
}
