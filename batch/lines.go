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
// custom_id of an OpenAI Batch-shaped line.
func resultKey(b []byte) (string, bool) {
	var rec struct {
		ID       *string `json:"id"`
		CustomID *string `json:"custom_id"`
	}
	if json.Unmarshal(b, &rec) != nil || (rec.ID == nil && rec.CustomID == nil) {
		return "", false
	}
	if rec.CustomID != nil {
		return itemKey(*rec.CustomID), true
	}
	return itemKey(*rec.ID), true
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

// scanLines calls fn for every non-blank line of the file at path; a
// missing file has no lines.
func scanLines(path string, fn func(n int, line []byte) error) error {
	return scan(path, false, fn)
}

// scan reads the lines of path. With complete, a last line without its
// newline (being written, or torn by a crash) is left out.
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
