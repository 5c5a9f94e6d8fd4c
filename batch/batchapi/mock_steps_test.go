package batchapi_test

import (
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// do takes step a for shard n with the client, then records it.
func (j *job) do(n int, a batchapi.Action) {
	j.t.Helper()
	ctx, now := j.t.Context(), time.Now()
	s, _ := j.tr.Shard(n)
	switch a.Do {
	case batchapi.Upload:
		path := j.dir + "/" + batchapi.FileName(n, s.Hash)
		size, err := batchapi.Verify(path, s.Hash)
		if err != nil {
			j.t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			j.t.Fatal(err)
		}
		defer f.Close()
		up, err := j.c.UploadFile(ctx, batchapi.FileName(n, s.Hash), f, size)
		if err != nil {
			j.t.Fatal(err)
		}
		j.record(batchapi.Record{Shard: n, Step: batchapi.StepUploaded, At: now.UnixMilli(), File: up.ID})
	case batchapi.Create:
		j.record(*a.Record)
		b, err := j.c.CreateBatch(ctx, s.File, batchapi.Metadata(jobID, n))
		if err != nil {
			j.t.Fatal(err)
		}
		if j.lose { // killed before the record: start over from the journal
			j.lose = false
			j.start()
			return
		}
		j.record(batchapi.Record{Shard: n, Step: batchapi.StepCreated, At: now.UnixMilli(), Batch: b.ID, Status: b.Status})
	case batchapi.Find:
		j.find(n, now)
	case batchapi.Poll:
		b, err := j.c.GetBatch(ctx, s.Batch)
		if err != nil {
			j.t.Fatal(err)
		}
		r := batchapi.StateRecord(n, batchapi.RemoteOf(b), now)
		if next, _ := batchapi.Apply(s, r); next.Status == s.Status && next.Counts == s.Counts {
			j.tr.Apply(r) // quiet: not journaled
			return
		}
		j.record(r)
	case batchapi.Download:
		j.download(n, s, now)
	case batchapi.Resubmit, batchapi.Report:
		ids := j.free(j.shardIDs(s), n)
		step := batchapi.StepResubmitted
		if a.Do == batchapi.Report {
			step = batchapi.StepReported
			for _, id := range ids {
				j.reported[id] = a.Reason
			}
		} else {
			j.plan(ids, a.Round)
		}
		j.record(batchapi.Record{Shard: n, Step: step, At: now.UnixMilli()})
	default:
		j.t.Fatalf("shard %d: unexpected %v", n, a.Do)
	}
}

func (j *job) find(n int, now time.Time) {
	var list []batchapi.Remote
	if err := j.c.ListBatches(j.t.Context(), func(b llm.Batch) bool { list = append(list, batchapi.RemoteOf(b)); return true }); err != nil {
		j.t.Fatal(err)
	}
	if m, ok := batchapi.Pick(jobID, n, list); ok {
		j.record(m.Record(n, now))
		return
	}
	j.record(batchapi.Record{Shard: n, Step: batchapi.StepAbsent, At: now.UnixMilli()})
}

// download writes each successful line once and reports permanent ones;
// retryable ones stay without a result, counted in the collected record.
func (j *job) download(n int, s batchapi.Shard, now time.Time) {
	for _, id := range []string{s.Output, s.Errors} {
		if id == "" {
			continue
		}
		rc, err := j.c.FileContent(j.t.Context(), id)
		if err != nil {
			j.t.Fatal(err)
		}
		err = llm.ReadBatchResults(rc, func(l llm.BatchResultLine) error {
			switch r := batchapi.ClassifyLine(l); {
			case j.written[r.CustomID] > 0:
			case r.Class == batchapi.Success:
				j.written[r.CustomID]++
			case r.Class == batchapi.Permanent:
				j.reported[r.CustomID] = r.Err.Kind.String()
			}
			return nil
		})
		rc.Close()
		if err != nil {
			j.t.Fatal(err)
		}
	}
	j.record(batchapi.Record{Shard: n, Step: batchapi.StepCollected, At: now.UnixMilli(), Retry: len(j.free(j.shardIDs(s), n))})
}

// TestJobAgainstMock: 50 lines in shards of 20, one line in five failing
// with a 5xx, the first create's record lost. Every shard is created once
// at the provider, every line ends with one result or is reported, and the
// failed lines go round once more before they are reported.
func TestJobAgainstMock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := mock.New(mock.Config{Seed: 3, Batch: mock.BatchConfig{Delay: time.Second, LineTime: 10 * time.Millisecond, FailRate: 0.2}})
		c, err := llm.New(llm.Config{BaseURL: "http://mock.invalid/v1", HTTPClient: memHTTP{h}, MaxAttempts: 2,
			Backoff: func(int) time.Duration { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		j := &job{t: t, c: c, dir: t.TempDir(), written: map[string]int{}, reported: map[string]string{}, lose: true}
		for i := range 50 {
			j.input = append(j.input, "q"+strconv.Itoa(i))
		}
		j.start()
		j.run()
		checkJob(t, j)
	})
}

func checkJob(t *testing.T, j *job) {
	if j.lose {
		t.Error("the lost record was never played")
	}
	created := map[string]int{}
	if err := j.c.ListBatches(t.Context(), func(b llm.Batch) bool { created[b.Metadata[batchapi.MetaShard]]++; return true }); err != nil {
		t.Fatal(err)
	}
	shards := j.tr.Shards()
	if len(shards) < 4 || len(created) != len(shards) {
		t.Errorf("%d shards planned, %d created; want 3 of round 0 and at least one of round 1, each created", len(shards), len(created))
	}
	for shard, n := range created {
		if n != 1 {
			t.Errorf("shard %s was created %d times at the provider", shard, n)
		}
	}
	done, reported := 0, 0
	for _, id := range j.input {
		switch {
		case j.written[id] == 1 && j.reported[id] == "":
			done++
		case j.written[id] == 0 && j.reported[id] != "":
			reported++
		default:
			t.Errorf("line %s: %d results, reported %q", id, j.written[id], j.reported[id])
		}
	}
	if done < 40 || done+reported != len(j.input) {
		t.Errorf("%d lines answered, %d reported, of %d", done, reported, len(j.input))
	}
	t.Logf("%d shards, %d lines answered, %d reported", len(shards), done, reported)
}
