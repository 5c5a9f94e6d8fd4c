package batchapi

import (
	"cmp"
	"time"
)

// Fallback says where the lines of a shard go once its resubmissions are
// spent (--batch-api-fallback).
type Fallback int

// The fallbacks.
const (
	FallbackNone   Fallback = iota // report them in the errors file
	FallbackOnline                 // send them through the online pipeline
)

// Policy holds the settings [Policy.Next] decides by. The zero Policy
// polls on PollEvery(30s, 5m), allows one minute for a provider's listing
// to show a new batch, resubmits unfinished lines once and then reports
// them.
type Policy struct {
	Poll     Schedule      // the poll schedule; nil: PollEvery(DefaultPollEvery, DefaultPollMax)
	Settle   time.Duration // how long a listing may lag a create; 0: one minute
	Rounds   int           // how often lines without a result go into a later shard; 0: once; below 0: never
	Fallback Fallback      // where lines go once the rounds are spent
}

// Do is the kind of step an [Action] asks for.
type Do int

// The steps, each followed by the record the owner journals (and applies)
// when it is done. A step that fails transiently is simply asked for again.
const (
	Stop   Do = iota // nothing more to do for the shard (finished, or never planned)
	Upload           // [Verify] and upload the shard file; then: uploaded{file}, or dropped if Verify fails
	// Create: journal and sync Action.Record, then create the batch with [Metadata]; then:
	// created{batch} on success, refused{code} on a 4xx, and nothing on any other failure
	// (the create may have happened: the shard stays Creating and Next says Find).
	Create
	Find     // list the key's batches and [Pick] the shard's; then: created{batch,status,note} or absent
	Poll     // read the batch; then: state{...}, journaled only when status or counts changed
	Cancel   // cancel the batch at the provider; then: state{...} from the batch the cancel returns
	Download // read the output and error files, write each line's result; then: collected{retry}
	Resubmit // put the lines still without a result into new shards of Action.Round; then: resubmitted
	Online   // send the lines still without a result online; then: resubmitted
	Report   // write the lines still without a result to the errors file, as Reason; then: reported
)

var doNames = [...]string{"stop", "upload", "create", "find", "poll", "cancel", "download", "resubmit", "online", "report"}

// String returns the step's name, for logs.
func (d Do) String() string {
	if d < 0 || int(d) >= len(doNames) {
		return "do(?)"
	}
	return doNames[d]
}

// An Action is the next step for a shard.
type Action struct {
	Do     Do
	At     time.Time // not before this; a time not after now (or zero) means at once
	Record *Record   // Create only: the intent to journal, sync and apply before sending
	Round  int       // Resubmit: the round of the new shards
	Reason string    // Resubmit, Online, Report: why the lines have no result, e.g. "batch_expired"
}

// Next returns the step the shard s needs at time now. It is the one place
// where the exactly-once rule is kept: a step that could submit work (the
// create) is asked for only after its intent is journaled, and a shard
// whose create may have happened without a record (a kill, or a create
// whose answer was lost) is looked for by metadata, not created again,
// until a listing at least Settle after the intent shows no batch.
//
// Poll and Cancel come with the time the poll schedule allows; Find waits
// out Settle after the create. The owner keeps one timer for the earliest
// At over its shards, as the packer's owner does with UntilNext.
func (p Policy) Next(s Shard, now time.Time) Action {
	switch s.Phase {
	case Planned:
		return Action{Do: Upload}
	case Uploaded:
		return Action{Do: Create, Record: &Record{Shard: s.N, Step: StepCreating, At: now.UnixMilli()}}
	case Creating:
		return Action{Do: Find, At: s.CreatingAt.Add(cmp.Or(p.Settle, time.Minute))}
	case Submitted:
		return p.submitted(s)
	case Collected:
		return p.settle(s)
	}
	return Action{Do: Stop}
}

// submitted decides for a shard whose batch exists.
func (p Policy) submitted(s Shard) Action {
	again := s.Polled
	if again.Before(s.CreatedAt) {
		again = s.CreatedAt // not read since the create
	}
	again = again.Add(p.delay(s.Quiet))
	switch {
	case s.Cancel && !s.Status.Done() && s.Status != StatusCancelling:
		if s.Polled.Before(s.CancelAt) {
			return Action{Do: Cancel} // not sent yet, as far as the journal knows: no state read since
		}
		return Action{Do: Cancel, At: again} // sent, and the provider has not taken it yet
	case !s.Status.Done():
		return Action{Do: Poll, At: again}
	case s.Status == StatusFailed:
		return p.settle(s) // nothing ran: no output to read
	}
	return Action{Do: Download}
}

// settle decides where a done shard's lines without a result go.
func (p Policy) settle(s Shard) Action {
	why := reason(s)
	rounds := p.Rounds
	if rounds == 0 {
		rounds = 1
	}
	switch {
	case s.Cancel: // the user's cancel spends no round: a rerun resubmits what is left
		return Action{Do: Resubmit, Round: s.Round, Reason: why}
	case s.Round < rounds:
		return Action{Do: Resubmit, Round: s.Round + 1, Reason: why}
	case p.Fallback == FallbackOnline:
		return Action{Do: Online, Reason: why}
	}
	return Action{Do: Report, Reason: why}
}

// reason names why a shard's lines are without a result.
func reason(s Shard) string {
	switch {
	case s.Batch == "":
		return cmp.Or(s.Code, "batch_refused")
	case s.Status == StatusFailed:
		return cmp.Or(s.Code, "batch_failed")
	case s.Status == StatusExpired:
		return "batch_expired"
	case s.Status == StatusCancelled:
		return "batch_cancelled"
	}
	return "batch_unanswered"
}

func (p Policy) delay(quiet int) time.Duration {
	if p.Poll == nil {
		return PollEvery(DefaultPollEvery, DefaultPollMax)(quiet)
	}
	return p.Poll(quiet)
}
