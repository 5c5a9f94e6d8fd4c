package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbatch/llmbatch/batch/batchapi"
	"github.com/llmbatch/llmbatch/internal/durable"
	"github.com/llmbatch/llmbatch/internal/jsonl"
	"github.com/llmbatch/llmbatch/llm"
)

// itemMeta is what a shard's items file keeps of each line's item, in the
// shard file's order: what the results and errors files need of an item
// that the provider's output does not say (DESIGN §3).
type itemMeta struct {
	ID    string `json:"id"`
	Line  int    `json:"line"`
	Model string `json:"model"`
	Batch bool   `json:"batch,omitempty"` // an OpenAI Batch input line: the result is Batch-shaped
	Fixes int    `json:"fixes,omitempty"` // see Item.fixes
}

func metaOf(it *Item) itemMeta {
	return itemMeta{ID: it.ID, Line: it.Line, Model: it.Model, Batch: it.Batch, Fixes: it.fixes}
}

func (m itemMeta) item() *Item {
	return &Item{ID: m.ID, Line: m.Line, Model: m.Model, Batch: m.Batch, fixes: m.Fixes}
}

// inShard returns the shard not finished that holds id, 0 for none.
func (o *offload) inShard(id string) int { return o.live[hashOf(id)] }

func hashOf(id string) [16]byte {
	sum := sha256.Sum256([]byte(id))
	return [16]byte(sum[:16])
}

func (o *offload) shardPath(s batchapi.Shard) string {
	return filepath.Join(o.dir, batchapi.FileName(s.N, s.Hash))
}

// metaPath is the items file beside a shard file.
func metaPath(shardPath string) string {
	return strings.TrimSuffix(shardPath, ".jsonl") + ".items.jsonl"
}

// eachMeta calls fn with each item of shard s, in the shard file's order.
func (o *offload) eachMeta(s batchapi.Shard, fn func(itemMeta) error) error {
	f, err := os.Open(metaPath(o.shardPath(s)))
	if err != nil {
		return fmt.Errorf("shard %d: %w", s.N, err)
	}
	defer f.Close()
	lr := jsonl.NewReader(f, 0)
	for lr.Next() {
		var m itemMeta
		if err := json.Unmarshal(lr.Bytes(), &m); err != nil {
			return fmt.Errorf("%s:%d: %w", f.Name(), lr.Line(), err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return lr.Err()
}

// metas returns shard s's items by id.
func (o *offload) metas(s batchapi.Shard) (map[string]itemMeta, error) {
	ms := make(map[string]itemMeta, s.Lines)
	err := o.eachMeta(s, func(m itemMeta) error { ms[m.ID] = m; return nil })
	return ms, err
}

// A shardPlanner is a [batchapi.Planner] that also writes each shard's
// items file, and keeps the plans it finished for their records. A batch
// takes one model, so an item of another model than the shard's finishes
// the shard: items of several models interleaved make small shards.
type shardPlanner struct {
	p     *batchapi.Planner
	cfg   batchapi.PlanConfig
	model string   // the model of the shard being built
	f     *os.File // the items file of the shard being built
	w     *bufio.Writer
	plans []batchapi.Plan
}

// current returns the number of the shard being built.
func (sp *shardPlanner) current() int { return sp.cfg.First + len(sp.plans) }

func (o *offload) newPlanner(round int) *shardPlanner {
	cfg := batchapi.PlanConfig{MaxRequests: o.api.MaxRequests, MaxBytes: o.api.MaxBytes, Dir: o.dir,
		First: o.tr.Last() + 1, Round: round}
	return &shardPlanner{cfg: cfg, p: batchapi.NewPlanner(cfg)}
}

// switchModel finishes the shard being built when it is of another model
// than it, and starts the next one for it.
func (sp *shardPlanner) switchModel(it *Item) error {
	if sp.model == it.Model {
		return nil
	}
	if sp.model != "" {
		plan, err := sp.p.Flush()
		if err == nil && plan != nil {
			err = sp.finish(*plan)
		}
		if err != nil {
			return err
		}
		sp.p.Close()
		cfg := sp.cfg
		cfg.First = sp.current()
		sp.p = batchapi.NewPlanner(cfg)
	}
	sp.model = it.Model
	return nil
}

// add puts it into a shard. An *batchapi.ItemError is the item's alone.
func (sp *shardPlanner) add(it *Item) error {
	if err := sp.switchModel(it); err != nil {
		return err
	}
	plan, err := sp.p.Add(batchapi.Line{ID: it.ID, Body: it.Body, Tokens: it.Tokens - it.MaxOutput})
	if plan != nil {
		if ferr := sp.finish(*plan); ferr != nil {
			return ferr
		}
	}
	if err != nil || sp.cfg.Dir == "" {
		return err // no Dir: a dry run, writing no file
	}
	if sp.f == nil {
		if sp.f, err = os.CreateTemp(sp.cfg.Dir, ".items-*.tmp"); err != nil {
			return &WriteError{err}
		}
		sp.w = bufio.NewWriter(sp.f)
	}
	b, _ := json.Marshal(metaOf(it)) // strings and numbers always encode
	sp.w.Write(append(b, '\n'))      // a write error is sticky: finish reports it
	return nil
}

// finish makes the items file of plan durable under its name.
func (sp *shardPlanner) finish(plan batchapi.Plan) error {
	if sp.f == nil { // a dry run
		sp.plans = append(sp.plans, plan)
		return nil
	}
	tmp := sp.f.Name()
	err := sp.w.Flush()
	if err == nil {
		err = sp.f.Sync()
	}
	if cerr := sp.f.Close(); err == nil {
		err = cerr
	}
	sp.f = nil
	if err == nil {
		err = os.Rename(tmp, metaPath(plan.Path))
	}
	if err == nil {
		err = durable.SyncDir(sp.cfg.Dir)
	}
	if err != nil {
		return &WriteError{err}
	}
	sp.plans = append(sp.plans, plan)
	return nil
}

// flush finishes the last shard, and returns every plan.
func (sp *shardPlanner) flush() ([]batchapi.Plan, error) {
	plan, err := sp.p.Flush()
	if err == nil && plan != nil {
		err = sp.finish(*plan)
	}
	if err != nil && !errors.As(err, new(*WriteError)) {
		err = &WriteError{err}
	}
	return sp.plans, err
}

func (sp *shardPlanner) close() {
	sp.p.Close()
	if sp.f != nil {
		sp.f.Close()
		os.Remove(sp.f.Name())
	}
}

// plan reads the input through the run's source and puts every item that
// has no outcome yet and is in no live shard into new shards; rejected
// lines and items no shard can take go to the errors file. The shards'
// planned records are journaled once their files are durable.
func (o *offload) plan(ctx context.Context) error {
	sp := o.newPlanner(0)
	defer sp.close()
	src := newSource(o.cfg, o.cfg.Input, o.shaper, o.j)
	defer src.close()
	err := o.writing(func(emit func(outcome) error) error {
		for {
			it, err := src.next(ctx)
			switch {
			case err == io.EOF:
				return nil
			case err != nil:
				return &StopError{err}
			case it.rejected != nil || it.onlyFix:
				err = emit(outcome{item: it, bad: it.rejected})
			case o.inShard(it.ID) > 0:
				continue // in a shard under way
			default:
				err = o.addItem(sp, it, emit)
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	return o.recordPlans(sp)
}

// addItem puts it into a shard, or, when no shard can take it, fails it.
func (o *offload) addItem(sp *shardPlanner, it *Item, emit func(outcome) error) error {
	err := sp.add(it)
	var ie *batchapi.ItemError
	if errors.As(err, &ie) {
		return emit(outcome{item: it, err: &llm.APIError{Kind: llm.BadRequest, Message: ie.Error()}, attempts: 0})
	}
	if err == nil {
		o.live[hashOf(it.ID)] = sp.current()
	}
	return err
}

// recordPlans journals the planned record of each shard sp finished.
func (o *offload) recordPlans(sp *shardPlanner) error {
	plans, err := sp.flush()
	if err != nil {
		return err
	}
	now := time.Now()
	for _, p := range plans {
		if err := o.record(p.Record(now)); err != nil {
			return err
		}
	}
	return nil
}

// errWriterGone is what emit returns once the writer has failed; the
// writer's own error is the one reported.
var errWriterGone = errors.New("batch: the writer stopped")

// writing lends the results files and the journal to the writer stage
// while fn runs, and hands each outcome fn emits to it. It returns once
// every outcome is written and recorded: the writer's error first, else fn's.
func (o *offload) writing(fn func(emit func(outcome) error) error) error {
	results := make(chan outcome, 64)
	wdone := make(chan struct{})
	var werr error
	go func() {
		defer close(wdone)
		werr = o.w.drain(results)
	}()
	err := fn(func(oc outcome) error {
		select {
		case results <- oc:
			return nil
		case <-wdone:
			return errWriterGone
		}
	})
	close(results)
	<-wdone
	if werr != nil {
		return werr
	}
	return err
}

// drain is the writer's stage over results, until it is closed.
func (w *writer) drain(results <-chan outcome) error { return w.run(results) }
