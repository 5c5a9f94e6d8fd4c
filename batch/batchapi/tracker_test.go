package batchapi

import (
	"errors"
	"testing"
	"time"
)

func shardRecs(n int, recs ...Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Shard = n
		out[i] = r
	}
	return out
}

func TestTracker(t *testing.T) {
	tr := NewTracker(Policy{})
	if _, ok := tr.UntilNext(t0); ok || tr.Last() != 0 || tr.AtProvider() != 0 {
		t.Fatal("an empty Tracker has work")
	}
	var all []Record
	all = append(all, shardRecs(1, rPlanned, rUploaded, rCreating, rCreated, state(time.Minute, StatusInProgress, 5, 0))...) // polled at t0+1m
	all = append(all, shardRecs(2, rPlanned, rUploaded)...)                                                                  // needs a create
	all = append(all, shardRecs(3, rPlanned, rUploaded, rCreating)...)                                                       // find after t0+1m2s
	all = append(all, shardRecs(5, rPlanned)...)                                                                             // needs an upload; 4 was never planned
	for _, r := range all {
		if err := tr.Apply(r); err != nil {
			t.Fatalf("Apply(%+v) = %v", r, err)
		}
	}
	if err := tr.Apply(Record{Shard: 1, Step: StepUploaded, File: "f"}); !errors.As(err, new(*StepError)) {
		t.Errorf("Apply(uploaded to a submitted shard) = %v, want a StepError", err)
	}
	if s, _ := tr.Shard(1); s.Phase != Submitted {
		t.Errorf("a refused record changed shard 1 to %v", s.Phase)
	}
	if tr.Last() != 5 || len(tr.Shards()) != 4 || tr.AtProvider() != 2 {
		t.Fatalf("Last %d, %d shards, %d at the provider; want 5, 4, 2", tr.Last(), len(tr.Shards()), tr.AtProvider())
	}
	// At t0+10s: shards 2 and 5 are due at once (lowest number first); 1 and 3 wait.
	now := t0.Add(10 * time.Second)
	steps := []struct {
		n    int
		do   Do
		then Record
	}{
		{2, Create, Record{Shard: 2, Step: StepCreating, At: now.UnixMilli()}},
		{5, Upload, Record{Shard: 5, Step: StepUploaded, File: "f5"}},
		{5, Create, Record{Shard: 5, Step: StepCreating, At: now.UnixMilli()}},
	}
	for _, st := range steps {
		n, a, ok := tr.Next(now)
		if !ok || n != st.n || a.Do != st.do {
			t.Fatalf("Next(t0+10s) = %d %v %v, want %d %v", n, a.Do, ok, st.n, st.do)
		}
		if err := tr.Apply(st.then); err != nil {
			t.Fatal(err)
		}
	}
	// Now nothing is due: 1 polls at t0+1m30s, 3 finds at t0+1m2s, 2 and 5 at t0+1m10s.
	if n, a, ok := tr.Next(now); ok {
		t.Fatalf("Next(t0+10s) = %d %v, want nothing due", n, a.Do)
	}
	if d, ok := tr.UntilNext(now); !ok || d != 52*time.Second {
		t.Errorf("UntilNext(t0+10s) = %v, %v; want 52s (shard 3's find)", d, ok)
	}
	if n, a, ok := tr.Next(t0.Add(2 * time.Minute)); !ok || n != 3 || a.Do != Find {
		t.Errorf("Next(t0+2m) = %d %v, want 3 find: the earliest due", n, a.Do)
	}
}

// TestTrackerNoWait: a --no-wait run leaves a batch in progress and exits
// (4); the cron run later finds its poll due at once.
func TestTrackerNoWait(t *testing.T) {
	tr := NewTracker(Policy{})
	for _, r := range shardRecs(1, rPlanned, rUploaded, rCreating, rCreated) {
		tr.Apply(r)
	}
	now := t0.Add(4 * time.Second)
	if _, _, ok := tr.Next(now); ok || tr.AtProvider() != 1 {
		t.Fatalf("just after the create: a step is due, or %d at the provider; want none due and 1 queued", tr.AtProvider())
	}
	later := t0.Add(8 * time.Hour)
	if n, a, ok := tr.Next(later); !ok || n != 1 || a.Do != Poll {
		t.Fatalf("the cron run: Next = %d %v %v, want a poll of shard 1 at once", n, a.Do, ok)
	}
	tr.Apply(StateRecord(1, Remote{Status: StatusCompleted, Counts: Counts{Total: 100, Completed: 100}, Output: "o"}, later))
	if tr.AtProvider() != 0 {
		t.Errorf("a completed batch is still counted as queued")
	}
	if _, a, _ := tr.Next(later); a.Do != Download {
		t.Errorf("after completion: %v, want download", a.Do)
	}
}
