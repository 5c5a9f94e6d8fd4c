package batch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/internal/jsonl"
)

// Causes of a rejected input line, matched with errors.Is on a [LineError].
var (
	ErrNotJSON     = errors.New("not a JSON object")
	ErrNoPrompt    = errors.New("no prompt, messages or body")
	ErrDuplicateID = errors.New("duplicate id")
	ErrTooLong     = errors.New("line too long")
	ErrBadID       = errors.New("id must be a non-empty string or an integer")
	ErrNoModel     = errors.New("no model: pass --model or give the record a model")
	ErrTemplate    = errors.New("template failed")
	ErrBadUTF8     = errors.New("not valid UTF-8")
)

// LineError is an input line that was rejected; the job goes on without it.
type LineError struct {
	Line int    // 1-based line number
	ID   string // the record's id, when it could be read
	Err  error  // one of the ErrX causes above, possibly wrapped with detail
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// recorded is what earlier runs of the job recorded: the open [checkpoint.Journal]
// for [Run], a [checkpoint.Snapshot] of it for [EstimateRun].
type recorded interface {
	Status(key string) (checkpoint.Status, bool)
	Counts() (done, failed, bad int)
}

// A source is the one reader of a job's input: it reads the lines, shapes
// them into items, rejects bad and duplicate lines, and leaves out what an
// earlier run finished. The run's reader stage and [EstimateRun] both read
// through it, so that a dry run counts exactly what a run would send.
//
// It counts every line it judges in its Counters (Read, Bad, Skipped,
// SkippedFailed). Memory stays flat however long the input (see idSet). A
// source is owned by one goroutine; close removes its temporary files.
type source struct {
	lr      *jsonl.Reader
	maxLine int
	shaper  *recordShaper
	seen    *idSet
	rec     recorded // nil when no run came before
	anyBad  bool     // rec holds rejected lines: look each line up
	retry   bool     // redo the items recorded as failed
	c       *Counters

	badBefore int64 // rejected lines an earlier run recorded already: not written again
}

// newSource returns a source of cfg.Input (cfg's defaults set) judged
// against rec, which may be nil.
func newSource(cfg *Config, in io.Reader, shaper *recordShaper, rec recorded) *source {
	s := &source{lr: jsonl.NewReader(in, cfg.MaxLineBytes), maxLine: cfg.MaxLineBytes, shaper: shaper,
		seen: newIDSet(), rec: rec, retry: cfg.RetryFailed, c: cfg.Counters}
	if rec != nil {
		// Lines rejected by earlier runs are looked up only when there are
		// any: those of this run are all behind the reader.
		_, _, bad := rec.Counts()
		s.anyBad = bad > 0
	}
	return s
}

func (s *source) close() { s.seen.close() }

// next returns the next item to hand on, which is one of:
//   - an item to send; with fixes set when its line was rejected by an
//     earlier run and has been fixed since, so its outcome clears that;
//   - a newly rejected line, as an item with rejected set, for the errors file;
//   - an item with onlyFix set: a line rejected earlier, fixed into an item
//     that is done already, whose rejection is all there is to clear.
//
// Lines that need nothing (blank, rejected as before, done or failed
// earlier) are counted and passed over. next returns io.EOF at the end of
// the input, ctx.Err() when ctx ends, and another error when the input
// cannot be read or the id set fails.
func (s *source) next(ctx context.Context) (*Item, error) {
	for s.lr.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if it, err := s.judge(); it != nil || err != nil {
			return it, err
		}
	}
	if err := s.lr.Err(); err != nil {
		return nil, fmt.Errorf("read input after line %d: %w", s.lr.Line(), err)
	}
	return nil, io.EOF
}

// judge decides what the line in hand asks for; nil for nothing.
func (s *source) judge() (*Item, error) {
	n := s.lr.Line()
	var it *Item
	var le *LineError
	switch line := s.lr.Bytes(); {
	case s.lr.TooLong():
		le = &LineError{Line: n, Err: fmt.Errorf("%w: over %d bytes", ErrTooLong, s.maxLine)}
	case len(trimSpace(line)) == 0:
		return nil, nil // blank lines are allowed between records
	default:
		var err error
		if it, le, err = s.shape(line, n); err != nil {
			return nil, err
		}
	}
	s.c.Read.Add(1)
	wasBad := s.anyBad && s.is(lineKey(n), checkpoint.Bad)
	switch {
	case le != nil:
		s.c.Bad.Add(1)
		if wasBad {
			s.badBefore++
			return nil, nil // recorded by an earlier run
		}
		return &Item{ID: le.ID, Line: n, rejected: le}, nil
	case s.skip(it):
		if !wasBad {
			return nil, nil
		}
		// The line was fixed into one done earlier (lines moved, say):
		// only its rejection is to be cleared.
		return &Item{Line: n, fixes: n, onlyFix: true}, nil
	case wasBad:
		it.fixes = n // the line was fixed: its answer clears its rejection
	}
	return it, nil
}

// shape makes an item of a non-blank line, or says why it is rejected. Its
// error is the id set's, which leaves no safe answer.
func (s *source) shape(line []byte, n int) (*Item, *LineError, error) {
	it, id, err := s.shaper.shape(line)
	if err == nil {
		fresh, serr := s.seen.add(it.ID)
		if serr != nil {
			return nil, nil, serr
		}
		if !fresh {
			err = ErrDuplicateID
		}
	}
	if err != nil {
		return nil, &LineError{Line: n, ID: id, Err: err}, nil
	}
	it.Line = n
	return it, nil, nil
}

// is reports whether an earlier run recorded key with status st.
func (s *source) is(key string, st checkpoint.Status) bool {
	if s.rec == nil {
		return false
	}
	got, ok := s.rec.Status(key)
	return ok && got == st
}

// skip reports whether an item already has its outcome from an earlier run.
func (s *source) skip(it *Item) bool {
	if s.rec == nil {
		return false
	}
	st, ok := s.rec.Status(itemKey(it.ID))
	switch {
	case !ok:
		return false
	case st == checkpoint.Done:
		s.c.Skipped.Add(1)
		return true
	case st == checkpoint.Failed && !s.retry:
		s.c.SkippedFailed.Add(1)
		return true
	}
	return false
}

// trimSpace cuts the spaces, tabs and carriage returns around b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
