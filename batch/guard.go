package batch

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/llmbatch/llmbatch/internal/filelock"
)

// The guards of the results and errors files, kept with the writer that
// owns the files: the lock that keeps a second run out (lockOutput) and the
// repair of what a crash leaves at their end (repairTail). The journal is
// guarded in its own package, checkpoint, with the same lock primitive
// (internal/filelock).

// outputLock is the lock a run holds on its results file, so that two runs
// given the same output and different checkpoints cannot both write it. It
// does not keep anyone from writing the file.
type outputLock struct{ f *os.File }

// lockOutput takes the lock on the results file at path, creating the file
// (mode 0600: it holds prompts and answers) if needed. When another run
// holds it, it returns a *SetupError saying so.
func lockOutput(path string) (*outputLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &SetupError{err}
	}
	if err := filelock.Lock(f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrHeld) {
			return nil, setupErr("%s is locked by another process (is another run writing the same output?)", path)
		}
		return nil, setupErr("lock %s: %w", path, err)
	}
	return &outputLock{f: f}, nil
}

// Close releases the lock. It may be called more than once.
func (l *outputLock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	uerr := filelock.Unlock(l.f)
	err := l.f.Close()
	l.f = nil
	return cmp.Or(uerr, err)
}

// repairTail cuts the torn tail off the JSONL file at path and returns how many bytes it cut. The torn tail
// is what follows the last newline (a line whose write a crash cut short), together with the complete lines
// just before it that hold a NUL byte: a power loss can keep a file's new size but not its data, which
// then reads as NULs, and no JSON line holds a raw NUL. A file with no line to keep is cut to nothing.
// A missing file is not an error: repairTail returns (0, nil). The cut is fsynced before repairTail returns.
//
// repairTail cuts only what a crash can leave: pieces that begin like a JSON object or hold NULs. A file
// whose last line is anything else (a text file given by mistake, a line the user added) is not changed,
// and repairTail returns an error wrapping [ErrNotJSONL]: a wrong path must not cost the user data.
//
// The writer's start calls it on the results and errors files before appending to them.
func repairTail(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err // names the file
	}
	cut, err := cutTail(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("repair %s: %w", path, err)
	}
	return cut, nil
}

// cutTail cuts f after its last newline, reading backwards from the end a block at a time.
func cutTail(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	keep, err := tornTail(f, size)
	if err != nil || keep == size {
		return 0, err
	}
	if err := checkTorn(f, keep, size); err != nil {
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

// tornTail returns the offset where the torn tail of the first size bytes of r starts (see [repairTail]),
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

// ErrNotJSONL is wrapped by the error of a run's start (a [SetupError]) when the file's tail is not what a crash leaves of a
// JSONL file: most likely the path names some other file.
var ErrNotJSONL = errors.New("not a JSONL file written by llmbatch")

// checkTorn checks that the bytes of r from keep to size, which tornTail would cut, are torn JSON lines:
// each piece between newlines starts with '{' or holds a NUL (see [repairTail]).
func checkTorn(r io.ReaderAt, keep, size int64) error {
	const peek = 64
	for off := keep; off < size; {
		head := make([]byte, min(peek, size-off))
		if _, err := r.ReadAt(head, off); err != nil && err != io.EOF {
			return err
		}
		end, err := lineEnd(r, off, size) // the offset after this piece's newline, or size
		if err != nil {
			return err
		}
		if head[0] != '{' && head[0] != '\n' {
			nul, err := holdsNUL(r, off, end)
			if err != nil {
				return err
			}
			if !nul {
				return fmt.Errorf("%w: line %q… at byte %d is neither JSON nor left by a crash; is this the right file?",
					ErrNotJSONL, bytes.TrimRight(head, "\n"), off+1)
			}
		}
		off = end
	}
	return nil
}

// lineEnd returns the offset just after the first newline at or after off, or size when there is none.
func lineEnd(r io.ReaderAt, off, size int64) (int64, error) {
	buf := make([]byte, 32<<10)
	for off < size {
		b := buf[:min(int64(len(buf)), size-off)]
		if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		off += int64(len(b))
	}
	return size, nil
}

// holdsNUL reports whether the bytes of r from off to end hold a NUL.
func holdsNUL(r io.ReaderAt, off, end int64) (bool, error) {
	buf := make([]byte, 32<<10)
	for off < end {
		b := buf[:min(int64(len(buf)), end-off)]
		if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
			return false, err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return true, nil
		}
		off += int64(len(b))
	}
	return false, nil
}
