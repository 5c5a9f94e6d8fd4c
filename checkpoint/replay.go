package checkpoint

import (
	"bytes"
	"io"
	"os"
	"path/filepath"

	"github.com/llmbatch/llmbatch/internal/durable"
	"github.com/llmbatch/llmbatch/internal/jsonl"
)

// load replays the journal's file into j, repairs a torn tail or writes the header of a new journal, and
// leaves the file offset where appending resumes.
func (j *Journal) load(s Settings) error {
	size := fileSize(j.f)
	j.idx = newIndex(size)
	rp := newReplayer(j.f, j.path)
	old, fresh, err := rp.header()
	if err != nil {
		return err
	}
	var end int64
	if !fresh {
		if diff := diffSettings(old, s); len(diff) > 0 {
			return &MismatchError{Path: j.path, Diff: diff}
		}
		if end, err = rp.records(&j.idx); err != nil {
			return err
		}
	}
	switch {
	case fresh:
		j.repaired = size
		err = j.create(s)
	case end < size:
		j.repaired = size - end
		err = j.truncate(end)
	default:
		_, err = j.f.Seek(end, io.SeekStart)
	}
	if err != nil {
		return opError("open", j.path, err)
	}
	return nil
}

// fileSize returns the size of f, or 0 if it cannot be known; it only sizes the index and the repair.
func fileSize(f *os.File) int64 {
	if fi, err := f.Stat(); err == nil {
		return fi.Size()
	}
	return 0
}

// A replayer reads a journal from its first byte: the header, then the records. [Open] and [Load] share
// it, so that a journal is read, and its tail judged, in one way only.
type replayer struct {
	path string
	lr   *jsonl.Reader // no line limit: a record holds a key of any length
}

func newReplayer(r io.Reader, path string) *replayer {
	return &replayer{path: path, lr: jsonl.NewReader(r, 0)}
}

// next reads the next line: its bytes without the newline, and whether it had one (a line without one is the
// last). It returns io.EOF when no line is left.
func (rp *replayer) next() (line []byte, complete bool, err error) {
	if rp.lr.Next() {
		return rp.lr.Bytes(), rp.lr.Complete(), nil
	}
	if err := rp.lr.Err(); err != nil {
		return nil, false, err
	}
	return nil, false, io.EOF
}

// header reads the first line and returns the settings it records. It returns fresh when there is no
// header to read: the file is empty, or holds only what is left of a header whose write was cut short.
func (rp *replayer) header() (s Settings, fresh bool, err error) {
	line, complete, err := rp.next()
	switch {
	case err == io.EOF:
		return nil, true, nil
	case err != nil:
		return nil, false, opError("read", rp.path, err)
	case !complete && tornHeader(line):
		return nil, true, nil
	case !complete:
		return nil, false, &CorruptError{Path: rp.path, Line: 1, Err: errNotJournal}
	}
	s, err = parseHeader(line)
	if err != nil {
		return nil, false, &CorruptError{Path: rp.path, Line: 1, Err: err}
	}
	return s, false, nil
}

// records replays the records that follow the header into x, and keeps its step lines (see # Step lines). It returns the offset just past the last
// valid record, which is short of the end when the file has a torn tail: a last line without its newline,
// or a line that is not a record followed by nothing that is (a crash or power loss leaves torn records
// and NUL bytes, never a valid record after them). It returns a *CorruptError when a valid record does
// follow a line that is not one: the file was damaged or edited, and guessing could skip an item or redo it.
func (rp *replayer) records(x *index) (end int64, err error) {
	for n := 2; ; n++ {
		end = rp.lr.Offset()
		line, complete, err := rp.next()
		switch {
		case err == io.EOF:
			return end, nil
		case err != nil:
			return 0, opError("read", rp.path, err)
		case !complete:
			return end, nil // the last line, torn before its newline
		}
		key, st, perr := parseRecord(line)
		if perr == nil {
			set(x, hashKey(key), key, st)
			continue
		}
		if isStep(line) {
			x.steps = append(x.steps, bytes.Clone(line))
			continue
		}
		switch valid, err := rp.recordFollows(); {
		case err != nil:
			return 0, err
		case valid:
			return 0, &CorruptError{Path: rp.path, Line: n, Err: perr}
		}
		return end, nil
	}
}

// recordFollows reads on to the end and reports whether any line left, with or without its newline, is a
// valid record or step line.
func (rp *replayer) recordFollows() (bool, error) {
	for {
		line, _, err := rp.next()
		switch {
		case err == io.EOF:
			return false, nil
		case err != nil:
			return false, opError("read", rp.path, err)
		}
		if _, _, err := parseRecord(line); err == nil || isStep(line) {
			return true, nil
		}
	}
}

// create starts the file afresh with the header for s, and makes it and its directory entry durable before
// any record can follow.
func (j *Journal) create(s Settings) error {
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	if _, err := j.f.WriteAt(encodeHeader(s), 0); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	if _, err := j.f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(j.path))
}

// truncate cuts the file at end, dropping a torn last line, and syncs the cut so that records appended
// later cannot land behind the old garbage.
func (j *Journal) truncate(end int64) error {
	if err := j.f.Truncate(end); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	_, err := j.f.Seek(end, io.SeekStart)
	return err
}
