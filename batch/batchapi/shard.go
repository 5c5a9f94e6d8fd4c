package batchapi

import (
	"cmp"
	"fmt"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// Status is a batch's state at the provider: llm's, named here so that a
// Shard reads on its own. See [llm.BatchStatus] for the states and
// [llm.BatchStatus.Done] for the ones that change no more.
type Status = llm.BatchStatus

// The states of a batch at the provider, as llm names them.
const (
	StatusValidating = llm.BatchValidating
	StatusInProgress = llm.BatchInProgress
	StatusFinalizing = llm.BatchFinalizing
	StatusCompleted  = llm.BatchCompleted
	StatusFailed     = llm.BatchFailed
	StatusExpired    = llm.BatchExpired
	StatusCancelling = llm.BatchCancelling
	StatusCancelled  = llm.BatchCancelled
)

// knownStatus reports whether s is one of the states above: a record with
// any other is refused, so that a damaged journal is not taken for a state.
func knownStatus(s Status) bool {
	switch s {
	case StatusValidating, StatusInProgress, StatusFinalizing, StatusCancelling:
		return true
	}
	return s.Done()
}

// Phase is how far a shard has got through its durable steps. The
// provider's own progress, once the batch exists, is in [Shard.Status].
type Phase int

// The phases of a shard, each entered by the journal record named.
const (
	Unplanned Phase = iota // the zero Shard: nothing journaled yet
	Planned                // planned: the file is written and its hash journaled
	Uploaded               // uploaded: the provider holds the file
	Creating               // creating: a create may have been sent, its answer not journaled
	Submitted              // created: the batch exists; Status follows the provider
	Collected              // collected: its results are written; Retry lines still have none
	Finished               // done: nothing more to do (collected with Retry 0, resubmitted, reported, dropped)
)

var phaseNames = [...]string{"unplanned", "planned", "uploaded", "creating", "submitted", "collected", "finished"}

// String returns the phase's name, as status prints it.
func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}

// Counts are a batch's request counts as the provider reports them:
// llm's, named here so that a Shard reads on its own.
type Counts = llm.BatchCounts

// A Shard is one batch of request lines on its way through the provider's
// Batch API: what the journal says of it, replayed by [Apply]. It is a plain
// value; [Next] says what to do with it.
type Shard struct {
	N      int    // number, from 1; the batch's llmbatch_shard metadata
	Round  int    // 0 for a first submission; each resubmission of unfinished lines adds 1
	Hash   string // hex SHA-256 of the shard file
	Lines  int    // request lines in the file
	Bytes  int64  // the file's size
	Tokens int64  // estimated prompt tokens of the lines

	Phase  Phase
	File   string // the input file's id, once uploaded
	Batch  string // the batch's id, once created
	Status Status // the provider's state of the batch, once created
	Counts Counts
	Output string // the output file's id, once the provider names one
	Errors string // the error file's id, once the provider names one
	Code   string // why the batch failed, or the create was refused: the provider's code
	Retry  int    // lines without a result when collected
	Note   string // the last note (how a batch was found, why a create was refused)

	Cancel     bool      // the user asked to cancel: the batch is cancelled, and what is left resubmitted by a rerun
	CreatingAt time.Time // when the last create was (or was about to be) sent
	CreatedAt  time.Time // when the batch's id was journaled: the time since submit counts from here
	CancelAt   time.Time // when the cancel was asked for
	Polled     time.Time // when a state record was last applied: the provider's state last read
	Quiet      int       // polls in a row that found no change, for the poll schedule
}

// A StepError is returned by [Apply] for a record that does not follow from
// the shard's phase, such as an uploaded record for a shard never planned:
// a journal written out of order, or one shard's record applied to another.
type StepError struct {
	Shard int
	Step  Step
	Phase Phase
}

func (e *StepError) Error() string {
	return fmt.Sprintf("batchapi: shard %d: a %s record cannot follow phase %v", e.Shard, e.Step, e.Phase)
}

// Apply returns s after the event r, or s unchanged and a [*StepError] when
// r does not follow from s. It is the one way shard records are read: the
// journal's replay applies each shard's records in order, and the live
// loop applies each record it journals, so that both reach the same Shard.
//
// A state record whose status and counts equal s's counts as a quiet poll
// (Quiet grows); the live loop applies such a record without journaling it.
func Apply(s Shard, r Record) (Shard, error) {
	var at time.Time // a record without a time leaves the shard's times zero: due at once
	if r.At != 0 {
		at = time.UnixMilli(r.At).UTC()
	}
	next, ok := s, false
	if s.Phase == Unplanned || r.Shard == s.N {
		if next, ok = submitStep(s, r, at); !ok {
			next, ok = runStep(s, r, at)
		}
	}
	if !ok {
		return s, &StepError{r.Shard, r.Step, s.Phase}
	}
	return next, nil
}

// submitStep applies the steps up to the batch's creation, and reports
// whether r was one of them and follows from s.
func submitStep(s Shard, r Record, at time.Time) (Shard, bool) {
	switch r.Step {
	case StepPlanned:
		if s.Phase <= Planned {
			return Shard{N: r.Shard, Round: r.Round, Hash: r.Hash, Lines: r.Lines, Bytes: r.Bytes,
				Tokens: r.Tokens, Phase: Planned, Cancel: s.Cancel, CancelAt: s.CancelAt}, true
		}
	case StepUploaded:
		if s.Phase == Planned {
			s.Phase, s.File = Uploaded, r.File
			return s, true
		}
	case StepDropped:
		if s.Phase == Planned {
			s.Phase, s.Note = Finished, r.Note
			return s, true
		}
	case StepCreating:
		if s.Phase == Uploaded || s.Phase == Creating {
			s.Phase, s.CreatingAt = Creating, at
			return s, true
		}
	case StepCreated:
		if s.Phase == Creating {
			s.Phase, s.Batch, s.Status = Submitted, r.Batch, cmp.Or(r.Status, StatusValidating)
			s.Note, s.CreatedAt, s.Quiet = r.Note, at, 0
			return s, true
		}
	case StepAbsent:
		if s.Phase == Creating {
			s.Phase = Uploaded
			return s, true
		}
	case StepRefused:
		if s.Phase == Creating {
			s.Phase, s.Retry, s.Code, s.Note = Collected, s.Lines, r.Code, r.Note
			return s, true
		}
	}
	return s, false
}

// runStep applies the steps from the batch's creation on, and reports
// whether r was one of them and follows from s.
func runStep(s Shard, r Record, at time.Time) (Shard, bool) {
	switch r.Step {
	case StepState:
		if s.Phase == Submitted {
			return applyState(s, r, at), true
		}
	case StepCancel: // harmless on a finished shard: there is nothing left to cancel
		if s.Phase != Finished && !s.Cancel {
			s.Cancel, s.CancelAt = true, at
		}
		return s, true
	case StepCollected:
		if s.Phase == Submitted && s.Status.Done() {
			s.Phase, s.Retry = Collected, r.Retry
			if r.Retry == 0 {
				s.Phase = Finished
			}
			return s, true
		}
	case StepResubmitted, StepReported:
		if s.Phase == Collected || (s.Phase == Submitted && s.Status == StatusFailed) {
			s.Phase = Finished
			return s, true
		}
	}
	return s, false
}

// applyState takes in a state record: the provider's view at time at.
func applyState(s Shard, r Record, at time.Time) Shard {
	c := Counts{Total: r.Total, Completed: r.Completed, Failed: r.Failed}
	if r.Status == s.Status && c == s.Counts {
		s.Quiet++
	} else {
		s.Quiet = 0
	}
	s.Status, s.Counts, s.Polled = r.Status, c, at
	s.Output, s.Errors = cmp.Or(r.Output, s.Output), cmp.Or(r.Errors, s.Errors)
	s.Code = cmp.Or(r.Code, s.Code)
	return s
}
