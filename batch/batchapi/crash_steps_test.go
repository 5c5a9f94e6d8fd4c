package batchapi

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// do takes one step, as the wiring will: network calls and records in the
// order each Do's doc gives.
func (w *world) do(n int, a Action) error {
	s, _ := w.tr.Shard(n)
	if err := w.tick(); err != nil { // a kill before the step
		return err
	}
	switch a.Do {
	case Upload:
		id := fmt.Sprintf("file-%d", len(w.prov.files)+1)
		w.prov.files[id] = w.files[s.Hash]
		return w.record(Record{Shard: n, Step: StepUploaded, At: w.now.UnixMilli(), File: id})
	case Create:
		if err := w.record(*a.Record); err != nil { // the intent, before the create
			return err
		}
		b, err := w.prov.create(s.File, Metadata(simJob, n), w.now)
		if err != nil {
			return nil // the answer is lost: record nothing, Next says Find
		}
		return w.record(Record{Shard: n, Step: StepCreated, At: w.now.UnixMilli(), Batch: b.ID})
	case Find:
		var list []Remote
		for _, b := range w.prov.batches {
			if w.now.Sub(b.at) >= 30*time.Second { // the listing lags
				list = append(list, w.prov.view(b, w.now))
			}
		}
		if m, ok := Pick(simJob, n, list); ok {
			return w.record(m.Record(n, w.now))
		}
		return w.record(Record{Shard: n, Step: StepAbsent, At: w.now.UnixMilli()})
	case Poll:
		r := StateRecord(n, w.prov.view(w.batch(s.Batch), w.now), w.now)
		if next, _ := Apply(s, r); next.Status == s.Status && next.Counts == s.Counts {
			return w.tr.Apply(r) // a quiet poll: applied, not journaled
		}
		return w.record(r)
	case Download:
		return w.download(n, s)
	case Resubmit, Report:
		return w.settle(n, s, a)
	}
	return fmt.Errorf("shard %d: unexpected step %v", n, a.Do)
}

func (w *world) batch(id string) *simBatch {
	for _, b := range w.prov.batches {
		if b.ID == id {
			return b
		}
	}
	panic("no batch " + id)
}

// download writes each answered line not yet in the results file (so that
// a second download writes nothing twice), then records what is left.
func (w *world) download(n int, s Shard) error {
	b := w.batch(s.Batch)
	v := w.prov.view(b, w.now)
	for _, id := range b.ids[:v.Counts.Completed] {
		if w.written[id] > 0 {
			continue
		}
		if err := w.tick(); err != nil { // a kill in the middle of the write
			return err
		}
		w.written[id]++
	}
	left := len(w.left(w.files[s.Hash], n))
	return w.record(Record{Shard: n, Step: StepCollected, At: w.now.UnixMilli(), Retry: left})
}

// settle plans the lines still without a result into new shards, or
// reports them, then records that the shard is done.
func (w *world) settle(n int, s Shard, a Action) error {
	ids := w.left(w.files[s.Hash], n)
	if a.Do == Report {
		for _, id := range ids {
			w.reported[id] = true
		}
		return w.record(Record{Shard: n, Step: StepReported, At: w.now.UnixMilli()})
	}
	if err := w.plan(ids, a.Round); err != nil {
		return err
	}
	return w.record(Record{Shard: n, Step: StepResubmitted, At: w.now.UnixMilli()})
}

// TestKillAtEveryStep runs the job, killed at its k-th step for every k
// (and killed again at the same count in the first rerun), then lets a
// rerun finish, and checks at the provider and in the files that no shard
// was created twice and that every line has one result.
func TestKillAtEveryStep(t *testing.T) {
	clean := newWorld()
	if err := clean.run(0); err != nil {
		t.Fatalf("a run with no kill: %v", err)
	}
	total := clean.ops
	t.Logf("%d kill points, each killed once and twice", total)
	checkWorld(t, "no kill", clean)
	if len(clean.tr.Shards()) != 4 { // a, b and c, and the half of b that expired
		t.Fatalf("a run with no kill made %d shards, want 4", len(clean.tr.Shards()))
	}
	for k := 1; k <= total; k++ {
		for _, twice := range []bool{false, true} {
			w := newWorld()
			if err := w.run(k); !errors.Is(err, errKilled) {
				t.Fatalf("kill at %d: run = %v, want killed", k, err)
			}
			if twice {
				if err := w.run(k); err != nil && !errors.Is(err, errKilled) {
					t.Fatalf("kill at %d, twice: %v", k, err)
				}
			}
			if err := w.run(0); err != nil {
				t.Fatalf("kill at %d: the rerun = %v", k, err)
			}
			checkWorld(t, fmt.Sprintf("kill at %d (twice %v)", k, twice), w)
		}
	}
}

func checkWorld(t *testing.T, name string, w *world) {
	t.Helper()
	for shard, n := range w.prov.creates {
		if n != 1 {
			t.Errorf("%s: shard %s was created %d times at the provider", name, shard, n)
		}
	}
	var missing []string
	for _, id := range w.input {
		if w.written[id] != 1 && !w.reported[id] {
			missing = append(missing, fmt.Sprintf("%s×%d", id, w.written[id]))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s: lines without exactly one result: %s", name, strings.Join(missing, " "))
	}
	for _, s := range w.tr.Shards() {
		if s.Phase != Finished {
			t.Errorf("%s: shard %d ends %v", name, s.N, s.Phase)
		}
	}
	if n := w.tr.AtProvider(); n != 0 {
		t.Errorf("%s: %d shards still at the provider", name, n)
	}
}
