package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// RepairTail truncates the file at path just after its last newline, removing a torn last line left by a
// crash, and returns how many bytes it cut. A file with no newline at all is cut to nothing. A missing file
// is not an error: RepairTail returns (0, nil). The cut is fsynced before RepairTail returns.
//
// The pipeline calls it on the results and errors files before appending to them.
func RepairTail(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, opError("repair", path, err)
	}
	cut, err := repairTail(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, opError("repair", path, err)
	}
	return cut, nil
}

// repairTail cuts f after its last newline, reading backwards from the end a block at a time.
func repairTail(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	keep, err := lastLineEnd(f, size)
	if err != nil || keep == size {
		return 0, err
	}
	if err := f.Truncate(keep); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return size - keep, nil
}

// lastLineEnd returns the offset just past the last '\n' in the first size bytes of r, or 0 if there is none.
func lastLineEnd(r io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 32<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if n, err := r.ReadAt(b, start); err != nil && !(err == io.EOF && n == len(b)) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}
