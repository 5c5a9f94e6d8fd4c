package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/internal/jsonl"
)

// The journal keys of items and rejected lines, and how the lines of the
// results and errors files map to them: the one place that knows.
func itemKey(id string) string { return "i:" + id }
func lineKey(line int) string  { return "l:" + strconv.Itoa(line) }

// resultKey returns the journal key of a results-file line: its id, or the
// custom_id of an OpenAI Batch-shaped line; "" for a line it cannot read.
func resultKey(b []byte) (key string, st checkpoint.Status, kind string) {
	var rec struct {
		ID       *string `json:"id"`
		CustomID *string `json:"custom_id"`
	}
	switch {
	case json.Unmarshal(b, &rec) != nil:
	case rec.CustomID != nil:
		return itemKey(*rec.CustomID), checkpoint.Done, ""
	case rec.ID != nil:
		return itemKey(*rec.ID), checkpoint.Done, ""
	}
	return "", 0, ""
}

// errorsKey returns the journal key and status an errors-file line stands
// for, and the kind of its error; "" for a line it cannot read.
func errorsKey(b []byte) (key string, st checkpoint.Status, kind string) {
	var rec struct {
		ID    *string `json:"id"`
		Line  int     `json:"line"`
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &rec) != nil {
		return "", 0, ""
	}
	if rec.Error.Kind != KindInvalidInput && rec.ID != nil {
		return itemKey(*rec.ID), checkpoint.Failed, rec.Error.Kind
	}
	return lineKey(rec.Line), checkpoint.Bad, KindInvalidInput
}

// A fileLine is one line of a job's results or errors file, judged against
// the journal.
type fileLine struct {
	n     int               // its number, from 1
	raw   []byte            // the line, valid until the callback returns
	key   string            // its journal key; "" when it is not a line of that file
	st    checkpoint.Status // what it says: Done (a result), Failed or Bad (an errors line)
	kind  string            // an errors line's kind
	cur   checkpoint.Status // the journal's status of key, when known
	known bool              // the journal has a record of key
}

// stale reports whether the journal has moved past the line: a failure
// answered since, or a rejected line fixed since. A key's lines in a file
// all say the same status, so all of them are stale or none.
func (l *fileLine) stale() bool { return l.known && l.cur != l.st }

// unrecorded reports whether the journal lacks what the line says: the line
// was written and the run died before recording it.
func (l *fileLine) unrecorded() bool {
	return !l.known || l.st == checkpoint.Done && l.cur != checkpoint.Done
}

// A reconciler reads a job's results and errors files a line at a time and
// judges each line against the journal, as the next run's start does.
// Recovery (openWriter), [Inspect] and compactErrors read the files through
// it, so that the files are matched with the journal in one way only.
//
// It streams: a line is in memory only while fn sees it. Blank lines are
// passed over, and a missing file has no lines.
type reconciler struct {
	status   func(key string) (checkpoint.Status, bool) // the journal's, or a snapshot's
	complete bool                                       // leave out a last line without its newline: a run is writing it
}

// errorsFile calls fn for every line of the errors file at path.
func (rc reconciler) errorsFile(path string, fn func(*fileLine) error) error {
	return rc.read(path, errorsKey, fn)
}

// resultsFile calls fn for every line of the results file at path.
func (rc reconciler) resultsFile(path string, fn func(*fileLine) error) error {
	return rc.read(path, resultKey, fn)
}

func (rc reconciler) read(path string, judge func([]byte) (string, checkpoint.Status, string), fn func(*fileLine) error) error {
	return scan(path, rc.complete, func(n int, b []byte) error {
		l := fileLine{n: n, raw: b}
		if l.key, l.st, l.kind = judge(b); l.key != "" {
			l.cur, l.known = rc.status(l.key)
		}
		return fn(&l)
	})
}

// unrecorded calls add for every line of the job's errors and results files
// that the journal lacks, as rc judges it (errors first: a result answers
// a failure): the lines the next run's recovery records. Recovery and
// [EstimateRun] both find them here. A line that is not a line of its file
// is a *SetupError, as it stops a run.
func (rc reconciler) unrecorded(output, errs string, add func(key string, st checkpoint.Status) error) error {
	each := func(path, what string) func(*fileLine) error {
		return func(l *fileLine) error {
			switch {
			case l.key == "":
				return setupErr("%s:%d: not %s; is this the right file?", path, l.n, what)
			case l.unrecorded():
				return add(l.key, l.st)
			}
			return nil
		}
	}
	if err := rc.errorsFile(errs, each(errs, "an errors-file line")); err != nil {
		return err
	}
	return rc.resultsFile(output, each(output, "a result line"))
}

// scan calls fn for every non-blank line of the file at path; a missing
// file has no lines. With complete, a last line without its newline (being
// written, or torn by a crash) is left out.
func scan(path string, complete bool, fn func(n int, line []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return &SetupError{err}
	}
	defer f.Close()
	lr := jsonl.NewReader(f, 0)
	for lr.Next() {
		if b := lr.Bytes(); len(trimSpace(b)) > 0 && (lr.Complete() || !complete) {
			if err := fn(lr.Line(), b); err != nil {
				return err
			}
		}
	}
	if err := lr.Err(); err != nil {
		return &SetupError{fmt.Errorf("%s: read after line %d: %w", path, lr.Line(), err)}
	}
	return nil
}
