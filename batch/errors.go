package batch

import (
	"errors"
	"io/fs"
	"syscall"
)

// ErrInterrupted is returned by [Run] when Config.Stop was closed: the work
// in flight was recorded and a rerun resumes. (exit 130)
var ErrInterrupted = errors.New("interrupted: rerun the same command to resume")

// StopError is returned by [Run] when the API made going on pointless (bad
// key, spent quota, a server down for longer than the client's breaker
// allows) or the input could not be read to its end. Rerunning resumes.
// (exit 3)
type StopError struct{ Err error }

func (e *StopError) Error() string { return "stopped: " + e.Err.Error() }
func (e *StopError) Unwrap() error { return e.Err }

// WriteError is a failure to write the results, errors or checkpoint file:
// the run stops (exit 3) and nothing is recorded as done that is not in the
// results file.
type WriteError struct{ Err error }

// Error names the file and the cause once, with a hint for the usual
// causes: "cannot write out.jsonl: no space left on device (the disk is
// full)".
func (e *WriteError) Error() string {
	if pe, ok := errors.AsType[*fs.PathError](e.Err); ok {
		return "cannot write " + pe.Path + ": " + pe.Err.Error() + writeHint(e.Err)
	}
	return "cannot write: " + e.Err.Error() + writeHint(e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// writeHint says in words what the usual causes of a failed write mean.
func writeHint(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return " (the disk is full)"
	case errors.Is(err, syscall.EFBIG):
		return " (the file size limit was reached: see ulimit -f)"
	case errors.Is(err, syscall.EDQUOT):
		return " (the disk quota is used up)"
	case errors.Is(err, syscall.EROFS):
		return " (the file system is read-only)"
	case errors.Is(err, fs.ErrPermission):
		return " (permission denied)"
	}
	return ""
}

// pathErr returns err naming path once: as it is when it already names it
// (an *fs.PathError from the file), or wrapped with the path.
func pathErr(path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		return err
	}
	return &fs.PathError{Op: "write", Path: path, Err: err}
}

// errEnded drains a run that ended without a stop, releasing the watcher.
var errEnded = errors.New("batch: the run ended")
