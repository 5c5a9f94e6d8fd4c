// Package filelock takes advisory locks on open files without waiting:
// flock on Unix, LockFileEx on Windows, and nothing on systems with
// neither. The journal (checkpoint) and the results file (batch) are locked
// with it. It imports the standard library only.
package filelock

import "errors"

// ErrHeld is returned by [Lock] and [LockShared] when someone else holds the
// lock.
var ErrHeld = errors.New("filelock: held by someone else")
