package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// RepairTail cuts the torn tail off the JSONL file at path and returns how many bytes it cut. The torn tail
// is what follows the last newline (a line whose write a crash cut short), together with the complete lines
// just before it that hold a NUL byte: a power loss can keep a file's new size but not its data, which
// then reads as NULs, and no JSON line holds a raw NUL. A file with no line to keep is cut to nothing.
// A missing file is not an error: RepairTail returns (0, nil). The cut is fsynced before RepairTail returns.
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
	keep, err := tornTail(f, size)
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

// tornTail returns the offset where the torn tail of the first size bytes of r starts (see [RepairTail]),
// reading backwards from the end a block at a time. Only the block in hand is kept in memory, however long
// the lines.
func tornTail(r io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 32<<10)
	keep := int64(-1) // the end of the complete line being examined, -1 while in the part after the last newline
	nul := false      // that line holds a NUL byte
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if n, err := r.ReadAt(b, start); err != nil && !(err == io.EOF && n == len(b)) {
			return 0, err
		}
		for len(b) > 0 {
			i := bytes.LastIndexByte(b, '\n')
			if keep >= 0 && bytes.IndexByte(b[i+1:], 0) >= 0 {
				nul = true
			}
			if i < 0 {
				break
			}
			if keep >= 0 && !nul {
				return keep, nil // the line ending at keep is whole and sound
			}
			keep, nul = start+int64(i)+1, false
			b = b[:i]
		}
		end = start
	}
	if keep >= 0 && !nul {
		return keep, nil // the first line of the file is whole and sound
	}
	return 0, nil
}
