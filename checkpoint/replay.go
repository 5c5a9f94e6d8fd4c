package checkpoint

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// load replays the journal's file into j, repairs a torn tail or writes the header of a new journal, and
// leaves the file offset where appending resumes.
func (j *Journal) load(s Settings) error {
	size := int64(0)
	if fi, err := j.f.Stat(); err == nil {
		size = fi.Size()
	}
	// A record is rarely shorter than 32 bytes, so this rarely grows the map, or overshoots by much.
	j.status = make(map[keyHash]Status, size/32)

	end, fresh, err := j.replay(s)
	if err != nil {
		return err
	}
	switch {
	case fresh:
		err = j.create(s)
	case end < size:
		err = j.truncate(end)
	default:
		_, err = j.f.Seek(end, io.SeekStart)
	}
	if err != nil {
		return opError("open", j.path, err)
	}
	return nil
}

// replay reads the header and the records. It returns the offset just past the last complete, valid record,
// or fresh when the file holds no header yet (it is empty, or its header was torn by a crash).
func (j *Journal) replay(s Settings) (end int64, fresh bool, err error) {
	lr := lineReader{r: bufio.NewReaderSize(j.f, 64<<10)}
	if fresh, err := j.readHeader(&lr, s); fresh || err != nil {
		return 0, fresh, err
	}
	for n := 2; ; n++ {
		end = lr.off
		line, complete, err := lr.next()
		if err == io.EOF || err == nil && !complete {
			return end, false, nil // the end, or a torn last line
		}
		if err != nil {
			return 0, false, opError("read", j.path, err)
		}
		key, st, perr := parseRecord(line)
		if perr == nil {
			set(j, hashKey(key), key, st)
			continue
		}
		switch _, _, err := lr.next(); {
		case err == io.EOF:
			return end, false, nil // an invalid last line is torn too: a crash can leave garbage
		case err != nil:
			return 0, false, opError("read", j.path, err)
		}
		return 0, false, &CorruptError{Path: j.path, Line: n, Err: perr}
	}
}

// readHeader reads the first line and checks that it is a header recording settings s. It returns fresh
// when there is no header to read.
func (j *Journal) readHeader(lr *lineReader, s Settings) (fresh bool, err error) {
	line, complete, err := lr.next()
	switch {
	case err == io.EOF:
		return true, nil
	case err != nil:
		return false, opError("read", j.path, err)
	case !complete && tornHeader(line):
		return true, nil
	case !complete:
		return false, &CorruptError{Path: j.path, Line: 1, Err: errNotJournal}
	}
	old, err := parseHeader(line)
	if err != nil {
		return false, &CorruptError{Path: j.path, Line: 1, Err: err}
	}
	if diff := diffSettings(old, s); len(diff) > 0 {
		return false, &MismatchError{Path: j.path, Diff: diff}
	}
	return false, nil
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
	return syncDir(filepath.Dir(j.path))
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

// syncDir fsyncs a directory so that a file created in it survives a crash. Windows cannot open a directory
// for that, and its file systems make new entries durable themselves, so there it does nothing.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// lineReader reads lines of any length and counts the bytes it has consumed.
type lineReader struct {
	r    *bufio.Reader
	long []byte // holds a line longer than r's buffer
	off  int64  // bytes consumed, i.e. the offset of the next line
}

// next returns the next line without its newline, and whether it had one; a line without one is the last.
// The line is valid until the next call. next returns io.EOF only when no bytes are left.
func (lr *lineReader) next() (line []byte, complete bool, err error) {
	line, err = lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, line...)
		}
		line = lr.long
	}
	lr.off += int64(len(line))
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, false, io.EOF
	case err == io.EOF:
		return line, false, nil
	case err != nil:
		return nil, false, err
	}
	return line[:len(line)-1], true, nil
}
