package batchapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/llm"
)

// This file plays a job through the package's pieces and llm's client
// against the mock provider's Files and Batch APIs, in memory under
// synctest's fake clock, the way the wiring will: a loop over
// Tracker.Next, each step's network call, then its record journaled and
// applied. The create of the first shard "loses" its record, as a kill
// between the create and the record would, and the run starts over from
// the journal's bytes.

// memHTTP serves requests with the mock handler in memory, so that the
// batches' lives play under the fake clock.
type memHTTP struct{ h http.Handler }

func (m memHTTP) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

type job struct {
	t        *testing.T
	c        *llm.Client
	dir      string
	input    []string
	journal  []byte
	tr       *batchapi.Tracker
	written  map[string]int    // results, by id
	reported map[string]string // errors, by id: why
	lose     bool              // the next created record is lost
}

const jobID = "job-mock"

func body(id string) []byte {
	return []byte(`{"model":"mock-1","messages":[{"role":"user","content":"question ` + id + `"}]}`)
}

// record journals r and applies it.
func (j *job) record(r batchapi.Record) {
	j.t.Helper()
	line, err := batchapi.Encode(nil, r)
	if err != nil {
		j.t.Fatal(err)
	}
	j.journal = append(j.journal, line...)
	if err := j.tr.Apply(r); err != nil {
		j.t.Fatal(err)
	}
}

// start replays the journal and plans what no live shard holds.
func (j *job) start() {
	j.tr = batchapi.NewTracker(batchapi.Policy{})
	for _, line := range bytes.SplitAfter(j.journal, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		r, err := batchapi.Decode(line)
		if err != nil {
			j.t.Fatal(err)
		}
		if err := j.tr.Apply(r); err != nil {
			j.t.Fatal(err)
		}
	}
	j.plan(j.free(j.input, 0), 0)
}

// free returns the ids without a result held by no live shard but except.
func (j *job) free(ids []string, except int) []string {
	held := map[string]bool{}
	for _, s := range j.tr.Shards() {
		if s.N != except && s.Phase != batchapi.Finished {
			for _, id := range j.shardIDs(s) {
				held[id] = true
			}
		}
	}
	var out []string
	for _, id := range ids {
		if j.written[id] == 0 && j.reported[id] == "" && !held[id] {
			out = append(out, id)
		}
	}
	return out
}

func (j *job) shardIDs(s batchapi.Shard) []string {
	f, err := os.Open(j.dir + "/" + batchapi.FileName(s.N, s.Hash))
	if err != nil {
		j.t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	if err := batchapi.ReadLines(f, 0, func(l batchapi.Line) error { ids = append(ids, l.ID); return nil }); err != nil {
		j.t.Fatal(err)
	}
	return ids
}

func (j *job) plan(ids []string, round int) {
	p := batchapi.NewPlanner(batchapi.PlanConfig{MaxRequests: 20, Dir: j.dir, First: j.tr.Last() + 1, Round: round})
	defer p.Close()
	add := func(pl *batchapi.Plan, err error) {
		if err != nil {
			j.t.Fatal(err)
		}
		if pl != nil {
			j.record(pl.Record(time.Now()))
		}
	}
	for _, id := range ids {
		add(p.Add(batchapi.Line{ID: id, Body: body(id), Tokens: 10}))
	}
	add(p.Flush())
}

// run steps the shards until none has anything left.
func (j *job) run() {
	for {
		n, a, ok := j.tr.Next(time.Now())
		if !ok {
			d, waiting := j.tr.UntilNext(time.Now())
			if !waiting {
				return
			}
			time.Sleep(d)
			continue
		}
		j.do(n, a)
	}
}
