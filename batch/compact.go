package batch

import (
	"bufio"
	"errors"
	"hash/maphash"
	"os"
)

// compactErrors rewrites the errors file so that it, like the results,
// holds one line per key: it drops the lines the journal has moved past
// (items answered since, rejected lines fixed since) and all but the last
// line of a key written more than once (an item that failed again when
// retried). It writes a new file, syncs it and renames it over the old, so
// that a crash leaves one or the other; a failure to write is returned as a
// *WriteError and leaves the old file as it was, and so is a failure to read
// it (the run has sent everything: it is no setup error).
//
// # Memory
//
// It reads the file twice, a line at a time: first through the reconciler,
// to judge each line and find the last of each key, then to copy the lines
// kept. Between the passes it holds a bit for each line and, while judging,
// a 64-bit hash and a line number for each key with a live line (some 20
// bytes a failed item, less than the journal holds for it already); never
// the file. Two keys that share a hash (odds of about n²/2^65: 3e-8 for a
// million) would keep one line between them.
func (w *writer) compactErrors() error {
	path := w.cfg.Errors
	keep, drop, err := linesToKeep(reconciler{status: w.j.Status}, path)
	if err != nil {
		return &WriteError{notSetup(err)}
	}
	if drop == 0 {
		return nil
	}
	return replaceFile(path, func(bw *bufio.Writer) error {
		return notSetup(scan(path, false, func(n int, b []byte) error {
			if !keep.has(n) {
				return nil
			}
			if _, err := bw.Write(b); err != nil {
				return err
			}
			return bw.WriteByte('\n')
		}))
	})
}

// notSetup returns err without the *SetupError scan wraps its errors in: at
// a run's start they are setup errors (exit 2, nothing sent), but
// compaction comes after everything was sent, where a file the run wrote
// that cannot be read back is a *WriteError (exit 3).
func notSetup(err error) error {
	if se, ok := errors.AsType[*SetupError](err); ok {
		return se.Err
	}
	return err
}

// linesToKeep judges the lines of the errors file at path and returns the
// numbers of those compaction keeps, and how many it drops. A line that is
// not an errors line is not ours to judge, and is kept.
func linesToKeep(rc reconciler, path string) (keep bitset, drop int, err error) {
	seed := maphash.MakeSeed()
	last := map[uint64]int{} // key hash → its last live line so far
	err = rc.errorsFile(path, func(l *fileLine) error {
		switch {
		case l.key == "":
			keep.set(l.n, true)
		case l.stale():
			drop++
		default:
			h := maphash.String(seed, l.key)
			if n, again := last[h]; again {
				keep.set(n, false)
				drop++
			}
			last[h] = l.n
			keep.set(l.n, true)
		}
		return nil
	})
	return keep, drop, err
}

// bitset is a set of line numbers, a bit each.
type bitset []uint64

func (b *bitset) set(n int, on bool) {
	for n/64 >= len(*b) {
		*b = append(*b, 0)
	}
	if on {
		(*b)[n/64] |= 1 << (n % 64)
	} else {
		(*b)[n/64] &^= 1 << (n % 64)
	}
}

func (b bitset) has(n int) bool { return n/64 < len(b) && b[n/64]&(1<<(n%64)) != 0 }

// replaceFile writes a new file at path with fill, made durable, in place of
// the old one. On any failure the old file is left as it was, and the
// failure is returned as a *WriteError. The rename is not fsynced: a crash
// may bring the old file back, which holds what the new one does and more,
// all of it judged against the journal.
func replaceFile(path string, fill func(*bufio.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return &WriteError{err}
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return &WriteError{pathErr(tmp, err)}
	}
	return nil
}
