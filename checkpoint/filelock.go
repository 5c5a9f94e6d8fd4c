package checkpoint

import (
	"errors"
	"fmt"
	"os"
)

// FileLock is an exclusive advisory lock on a file other than the journal,
// such as the results file, so that two runs cannot write it at once even
// with different checkpoints. It does not keep anyone from writing the file.
type FileLock struct{ f *os.File }

// LockFile takes an exclusive lock on the file at path, creating it (mode
// 0600) if needed. When someone else holds the lock it returns a
// *LockedError, which matches ErrLocked.
func LockFile(path string) (*FileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		if errors.Is(err, errLockHeld) {
			return nil, &LockedError{Path: path}
		}
		return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
	}
	return &FileLock{f: f}, nil
}

// Close releases the lock. It may be called more than once.
func (l *FileLock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	uerr := unlock(l.f)
	err := l.f.Close()
	l.f = nil
	if uerr != nil {
		return uerr
	}
	return err
}
