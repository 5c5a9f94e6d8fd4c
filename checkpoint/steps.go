package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
)

// # Step lines
//
// Besides the records of keys, a journal holds step lines: JSON objects
// with a "step" member and no "k", which the caller writes with
// [Journal.AppendStep] and reads back, in the order written, with
// [Journal.Steps] or [Snapshot.Steps]. The Batch API mode journals each
// shard's steps this way (its shard records, decoded by batch/batchapi),
// so that the one journal, replayed in one way, holds both the items done
// and the shards under way. The journal does not look inside a step line.
//
// Step lines are few (tens per shard of 50,000 items) and kept in memory
// as they are.

// ErrNotStep is returned by [Journal.AppendStep] for a line that is not a
// step line.
var ErrNotStep = errors.New(`checkpoint: not a step line: want one JSON object with a "step" member and no "k"`)

// isStep reports whether line (without its newline) is a step line.
func isStep(line []byte) bool {
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(`"step"`)) {
		return false
	}
	var v struct {
		K    *json.RawMessage `json:"k"`
		Step *json.RawMessage `json:"step"`
	}
	return json.Unmarshal(line, &v) == nil && v.K == nil && v.Step != nil
}

// AppendStep appends a step line (see # Step lines); a trailing newline
// is optional, and the line must hold no other. Like [Journal.Append] it
// only buffers: the step is durable once Sync has returned nil, which the
// caller waits for before the network step the line announces.
func (j *Journal) AppendStep(line []byte) error {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.IndexByte(line, '\n') >= 0 || !isStep(line) {
		return ErrNotStep
	}
	if j.err != nil {
		return j.err
	}
	if _, err := j.w.Write(line); err != nil {
		return j.fail("write", err)
	}
	if err := j.w.WriteByte('\n'); err != nil {
		return j.fail("write", err)
	}
	j.dirty = true
	return nil
}

// Steps returns the step lines the journal held when it was opened, in
// the order they were written (those appended since are the caller's to
// remember). The slices must not be modified.
func (j *Journal) Steps() [][]byte {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.idx.steps
}

// Steps returns the journal's step lines, in the order they were written.
func (s *Snapshot) Steps() [][]byte { return s.idx.steps }
