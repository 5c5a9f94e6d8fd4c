package batchapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file drives a whole job through Next and Apply the way the wiring
// will, against a provider simulated in memory (a list of batches whose
// state follows the clock), killing the run at every step in turn and
// rerunning it from the journal's bytes alone. The real client against the
// mock's Batch API is the wiring's end-to-end test; this one checks the
// rule itself over every kill point.

var errKilled = errors.New("killed")

const simJob = "job-1"

// simBatch is a batch at the simulated provider.
type simBatch struct {
	Remote
	ids    []string
	at     time.Time // created
	expire bool      // ends expired with half its lines done
}

// provider is the simulated Batch API: a batch validates for a minute, runs
// until ten, and is listed only 30s after its create (a lagging listing).
type provider struct {
	files    map[string][]string
	batches  []*simBatch
	creates  map[string]int // by llmbatch_shard
	lost     bool           // the first create's answer is lost
	expireID string         // the first batch holding this id expires
}

func (p *provider) view(b *simBatch, now time.Time) Remote {
	r := b.Remote
	switch age := now.Sub(b.at); {
	case age < time.Minute:
		r.Status = StatusValidating
	case age < 10*time.Minute:
		r.Status, r.Counts = StatusInProgress, Counts{Total: len(b.ids)}
	case b.expire:
		r.Status, r.Counts, r.Output = StatusExpired, Counts{Total: len(b.ids), Completed: len(b.ids) / 2}, "out-"+b.ID
	default:
		r.Status, r.Counts, r.Output = StatusCompleted, Counts{Total: len(b.ids), Completed: len(b.ids)}, "out-"+b.ID
	}
	return r
}

func (p *provider) create(file string, meta map[string]string, now time.Time) (*simBatch, error) {
	ids := p.files[file]
	b := &simBatch{Remote: Remote{ID: fmt.Sprintf("batch-%d", len(p.batches)+1), CreatedAt: now.Unix(), Metadata: meta}, ids: ids, at: now}
	if p.expireID != "" && slices.Contains(ids, p.expireID) {
		b.expire, p.expireID = true, ""
	}
	p.batches = append(p.batches, b)
	p.creates[meta[MetaShard]]++
	if p.lost {
		p.lost = false
		return nil, errors.New("connection reset (the batch was created)")
	}
	return b, nil
}

// world is what survives a kill: the journal, the local shard files, the
// results file, the reported ids, and the provider.
type world struct {
	now      time.Time
	journal  []byte
	files    map[string][]string // shard files by hash
	written  map[string]int      // lines in the results file, by id
	reported map[string]bool
	prov     *provider
	input    []string

	ops, kill int // the run is killed at operation number kill (0: never)
	tr        *Tracker
}

func newWorld() *world {
	var input []string
	for _, p := range []string{"a", "b", "c"} {
		for i := range 4 {
			input = append(input, fmt.Sprintf("%s%d", p, i))
		}
	}
	return &world{now: t0, files: map[string][]string{}, written: map[string]int{}, reported: map[string]bool{}, input: input,
		prov: &provider{files: map[string][]string{}, creates: map[string]int{}, lost: true, expireID: "b0"}}
}

// tick is one place a kill may fall.
func (w *world) tick() error {
	if w.ops++; w.kill > 0 && w.ops == w.kill {
		return errKilled
	}
	return nil
}

// record journals r (an append and a sync, atomic) and applies it.
func (w *world) record(r Record) error {
	if err := w.tick(); err != nil {
		return err
	}
	line, err := Encode(nil, r)
	if err != nil {
		return err
	}
	w.journal = append(w.journal, line...)
	if err := w.tr.Apply(r); err != nil {
		return err
	}
	return w.tick()
}

// replay rebuilds the shards from the journal's bytes, as a rerun does.
func (w *world) replay() error {
	w.tr = NewTracker(Policy{})
	for _, line := range strings.SplitAfter(string(w.journal), "\n") {
		if line == "" {
			continue
		}
		r, err := Decode([]byte(line))
		if err != nil {
			return err
		}
		if err := w.tr.Apply(r); err != nil {
			return err
		}
	}
	return nil
}

// left returns the ids of ids without a result that no live shard other
// than except holds: those a new shard may take.
func (w *world) left(ids []string, except int) []string {
	var out []string
	for _, id := range ids {
		taken := w.written[id] > 0 || w.reported[id]
		for _, s := range w.tr.Shards() {
			taken = taken || (s.N != except && s.Phase != Finished && slices.Contains(w.files[s.Hash], id))
		}
		if !taken {
			out = append(out, id)
		}
	}
	return out
}

// plan puts ids into new shards of 4 lines, numbered after the last.
func (w *world) plan(ids []string, round int) error {
	for len(ids) > 0 {
		chunk := ids[:min(4, len(ids))]
		ids = ids[len(chunk):]
		sum := sha256.Sum256([]byte(strings.Join(chunk, "\n")))
		hash := hex.EncodeToString(sum[:])
		w.files[hash] = slices.Clone(chunk)
		n := w.tr.Last() + 1
		if err := w.record(Plan{N: n, Round: round, Hash: hash, Lines: len(chunk), Bytes: 100}.Record(w.now)); err != nil {
			return err
		}
	}
	return nil
}

// run is one process: replay, plan what no shard holds, then step the
// shards until none has anything left to do.
func (w *world) run(kill int) error {
	w.ops, w.kill = 0, kill
	if err := w.replay(); err != nil {
		return err
	}
	if err := w.plan(w.left(w.input, 0), 0); err != nil {
		return err
	}
	for {
		n, a, ok := w.tr.Next(w.now)
		if !ok {
			d, waiting := w.tr.UntilNext(w.now)
			if !waiting {
				return nil
			}
			w.now = w.now.Add(d) // the owner's timer fires
			continue
		}
		if err := w.do(n, a); err != nil {
			return err
		}
	}
}
