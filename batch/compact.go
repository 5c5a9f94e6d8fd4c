package batch

import (
	"bufio"
	"fmt"
	"os"
)

// compactErrors rewrites the errors file so that it, like the results,
// holds one line per key: it drops the lines the journal has moved past
// (items answered since, rejected lines fixed since) and all but the last
// line of a key written more than once (an item that failed again when
// retried). It writes a new file, syncs it and renames it over the old, so
// that a crash leaves one or the other; a failure to write is returned as a
// *WriteError and leaves the old file as it was.
//
// # Memory
//
// It reads the file twice through the reconciler, a line at a time: the
// first pass finds the keys with more than one line, the second writes. It
// keeps an idSet of the keys (flat: hashes spilled to temporary files) and
// the keys that have more than one line, with the number of their last:
// never the file.
func (w *writer) compactErrors() error {
	path := w.cfg.Errors
	rc := reconciler{status: w.j.Status}
	last, drop, err := lastLines(rc, path)
	if err != nil || drop == 0 {
		return err
	}
	keep := func(l *fileLine) bool {
		if l.key == "" {
			return true // not an errors line: not ours to judge, so kept
		}
		n, several := last[l.key]
		return !l.stale() && (!several || n == l.n)
	}
	return replaceFile(path, func(bw *bufio.Writer) error {
		return rc.errorsFile(path, func(l *fileLine) error {
			if !keep(l) {
				return nil
			}
			if _, err := bw.Write(l.raw); err != nil {
				return err
			}
			return bw.WriteByte('\n')
		})
	})
}

// lastLines reads the errors file at path and returns, for each key that
// has more than one live line, the number of its last, and how many lines
// compaction drops.
func lastLines(rc reconciler, path string) (last map[string]int, drop int, err error) {
	seen := newIDSet()
	defer seen.close()
	last = map[string]int{}
	err = rc.errorsFile(path, func(l *fileLine) error {
		switch {
		case l.key == "":
			return nil
		case l.stale():
			drop++
			return nil
		}
		fresh, err := seen.add(l.key)
		if err != nil {
			return &WriteError{fmt.Errorf("compact %s: %w", path, err)}
		}
		if !fresh {
			last[l.key] = l.n
			drop++
		}
		return nil
	})
	return last, drop, err
}

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
