package batchapi

import (
	"maps"
	"slices"
	"time"
)

// A Tracker holds the shards of one job and says which needs what next: the
// state machine that the wiring's loop owns, as the pipeline's packer stage
// owns its batch.Packer. It is rebuilt on a rerun by applying the
// journal's shard records in order, and kept up by applying each record as
// it is journaled.
//
// A Tracker is owned by one goroutine: it is not safe for concurrent use,
// starts no goroutine and keeps no timer; time comes in as arguments.
//
// # Use
//
//	tr := NewTracker(policy)
//	for _, r := range replayed { tr.Apply(r) } // StepErrors mean a damaged journal
//	plan what no live shard holds, journaling and applying each Plan's record
//	for {
//		n, a, ok := tr.Next(time.Now())
//		if !ok {
//			d, waiting := tr.UntilNext(time.Now())
//			if !waiting || noWait { break }  // with --no-wait: exit 4 if tr.AtProvider() > 0
//			sleep d (a timer, with ctx)
//			continue
//		}
//		do a for shard n: its network step, then journal, sync and tr.Apply the record its Do names
//	}
type Tracker struct {
	policy Policy
	shards map[int]Shard
}

// NewTracker returns a Tracker with no shard, deciding by p.
func NewTracker(p Policy) *Tracker {
	return &Tracker{policy: p, shards: map[int]Shard{}}
}

// Apply applies r to its shard; see the package-level [Apply]. On error
// the shard is unchanged.
func (t *Tracker) Apply(r Record) error {
	s, err := Apply(t.shards[r.Shard], r)
	if err != nil {
		return err
	}
	t.shards[r.Shard] = s
	return nil
}

// Shard returns shard n, and whether the Tracker has it.
func (t *Tracker) Shard(n int) (Shard, bool) {
	s, ok := t.shards[n]
	return s, ok && s.Phase != Unplanned
}

// Shards returns every shard, by number, for status and progress.
func (t *Tracker) Shards() []Shard {
	var out []Shard
	for _, n := range slices.Sorted(maps.Keys(t.shards)) {
		if s := t.shards[n]; s.Phase != Unplanned {
			out = append(out, s)
		}
	}
	return out
}

// Last returns the highest shard number, 0 when there is none: new shards
// are numbered from Last()+1 (PlanConfig.First), so that no number is
// reused, even one whose planned record went unanswered.
func (t *Tracker) Last() int {
	last := 0
	for n := range t.shards {
		last = max(last, n)
	}
	return last
}

// Next returns the shard whose step is due at now (At not after now), the
// earliest due first and, among equals, the lowest number; ok is false
// when no step is due.
func (t *Tracker) Next(now time.Time) (n int, a Action, ok bool) {
	for _, k := range slices.Sorted(maps.Keys(t.shards)) {
		b := t.policy.Next(t.shards[k], now)
		if b.Do == Stop || b.At.After(now) {
			continue
		}
		if !ok || b.At.Before(a.At) {
			n, a, ok = k, b, true
		}
	}
	return n, a, ok
}

// UntilNext returns how long after now the next step is due (0 when one
// is due already), and false when no shard has a step left: the job is
// done.
func (t *Tracker) UntilNext(now time.Time) (time.Duration, bool) {
	var first time.Time
	found := false
	for _, s := range t.shards {
		a := t.policy.Next(s, now)
		if a.Do == Stop {
			continue
		}
		if !found || a.At.Before(first) {
			first, found = a.At, true
		}
	}
	if !found {
		return 0, false
	}
	return max(0, first.Sub(now)), true
}

// AtProvider returns how many shards have a batch at the provider that is
// not done, or may have one (a create not yet confirmed): what a --no-wait
// run leaves queued, exiting 4.
func (t *Tracker) AtProvider() int {
	n := 0
	for _, s := range t.shards {
		if s.Phase == Creating || (s.Phase == Submitted && !s.Status.Done()) {
			n++
		}
	}
	return n
}
