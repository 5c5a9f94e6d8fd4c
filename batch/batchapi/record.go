package batchapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Step names a shard's journal record: what has just happened to it, or,
// for creating and cancel, what is about to.
type Step string

// The steps of a shard, in the order they are journaled. Each one is
// appended to the job's journal (and synced) before the network step that
// follows it is taken; see [Policy.Next].
const (
	StepPlanned     Step = "planned"     // the shard's file is written: number, round, hash, lines, bytes, tokens
	StepDropped     Step = "dropped"     // the planned file was lost before its upload: its lines go into new shards
	StepUploaded    Step = "uploaded"    // the provider holds the file: File
	StepCreating    Step = "creating"    // a create is about to be sent (intent; At)
	StepCreated     Step = "created"     // the batch exists: Batch (and, when found by metadata, Status and Note)
	StepAbsent      Step = "absent"      // a listing after a creating found no batch: none was made
	StepRefused     Step = "refused"     // the create was refused for good (a 4xx): Code, Note
	StepState       Step = "state"       // the provider's state and counts changed: Status, counts, file ids
	StepCancel      Step = "cancel"      // the user asked to cancel (intent; At)
	StepCollected   Step = "collected"   // output and error files read and written: Retry lines still lack a result
	StepResubmitted Step = "resubmitted" // those lines are in later shards (or sent online): the shard is done
	StepReported    Step = "reported"    // those lines are in the errors file: the shard is done
)

// A Record is one line of a shard's history in the job's checkpoint journal,
// a small JSON object such as
//
//	{"shard":3,"step":"uploaded","file":"file-abc"}
//
// Records are appended to the same journal as the items' records
// ({"k":..,"s":..}), which they never resemble: a Record always has "shard"
// and "step" and never "k". Replaying a shard's records in order through
// [Apply] rebuilds its [Shard]. Fields a step does not use are left out.
type Record struct {
	Shard  int    `json:"shard"`            // the shard's number, from 1
	Step   Step   `json:"step"`             // what happened
	At     int64  `json:"at,omitempty"`     // when, Unix milliseconds
	Round  int    `json:"round,omitempty"`  // planned: 0 for a first submission, 1 for a resubmission, ...
	Hash   string `json:"hash,omitempty"`   // planned: hex SHA-256 of the shard file
	Lines  int    `json:"lines,omitempty"`  // planned: request lines in the file
	Bytes  int64  `json:"bytes,omitempty"`  // planned: the file's size
	Tokens int64  `json:"tokens,omitempty"` // planned: the lines' estimated prompt tokens
	File   string `json:"file,omitempty"`   // uploaded: the input file id
	Batch  string `json:"batch,omitempty"`  // created: the batch id

	Status    Status `json:"status,omitempty"`    // state, created: the provider's state
	Total     int    `json:"total,omitempty"`     // state: request counts as the provider gives them
	Completed int    `json:"completed,omitempty"` //
	Failed    int    `json:"failed,omitempty"`    //
	Output    string `json:"output,omitempty"`    // state: the output file id, once there is one
	Errors    string `json:"errors,omitempty"`    // state: the error file id, once there is one
	Code      string `json:"code,omitempty"`      // state, refused: the provider's first error code

	Retry int    `json:"retry,omitempty"` // collected: lines still without a result
	Note  string `json:"note,omitempty"`  // created, refused: a sentence for the log and status
}

// ErrNotRecord is wrapped by [Decode] for a line that is not a valid shard
// record: not JSON, not an object with a shard number and a known step, or
// missing a field its step needs.
var ErrNotRecord = errors.New("batchapi: not a shard record")

// Encode appends r's journal line, newline included, to dst. It returns an
// error wrapping [ErrNotRecord] if r is not valid, so that the journal never
// holds a record that [Decode] would refuse.
func Encode(dst []byte, r Record) ([]byte, error) {
	if err := r.check(); err != nil {
		return dst, err
	}
	b, err := json.Marshal(r) // escapes every control character: one line
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrNotRecord, err)
	}
	return append(append(dst, b...), '\n'), nil
}

// Decode reads one journal line (with or without its newline) as a Record.
// It returns an error wrapping [ErrNotRecord] for anything else, such as an
// item's record, which the journal's replay reads instead.
func Decode(line []byte) (Record, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if !bytes.Contains(line, []byte(`"shard"`)) { // cheap: item records never hold it
		return Record{}, fmt.Errorf("%w: no shard field", ErrNotRecord)
	}
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrNotRecord, err)
	}
	if err := r.check(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// check reports whether r has what its step needs.
func (r Record) check() error {
	bad := func(why string) error { return fmt.Errorf("%w: %s record %s", ErrNotRecord, r.Step, why) }
	switch {
	case r.Shard < 1:
		return bad("without a shard number")
	case r.At < 0 || r.Round < 0 || r.Lines < 0 || r.Bytes < 0 || r.Tokens < 0 || r.Retry < 0 ||
		r.Total < 0 || r.Completed < 0 || r.Failed < 0:
		return bad("with a negative number")
	}
	switch r.Step {
	case StepPlanned:
		if !isHash(r.Hash) || r.Lines < 1 || r.Bytes < 1 {
			return bad("without hash, lines and bytes")
		}
	case StepUploaded:
		if r.File == "" {
			return bad("without a file id")
		}
	case StepCreated:
		if r.Batch == "" {
			return bad("without a batch id")
		}
	case StepState:
		if !knownStatus(r.Status) {
			return bad("without a known status")
		}
	case StepDropped, StepCreating, StepAbsent, StepRefused, StepCancel, StepCollected, StepResubmitted, StepReported:
	default:
		return fmt.Errorf("%w: unknown step %.40q", ErrNotRecord, r.Step)
	}
	if r.Status != "" && !knownStatus(r.Status) {
		return bad("with an unknown status")
	}
	return nil
}

// isHash reports whether s is a lower-case hex SHA-256.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
