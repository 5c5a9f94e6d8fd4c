//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filelock

import (
	"os"
	"syscall"
)

// Lock takes an exclusive flock on f without waiting. flock locks belong to the open file description, so a
// second Lock of the file in the same process is refused too, and the kernel drops the lock when the process dies,
// however it dies.
func Lock(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// LockShared takes a shared flock on f without waiting: it coexists with other shared locks, and fails with
// ErrHeld while Lock's exclusive one is held.
func LockShared(f *os.File) error { return flock(f, syscall.LOCK_SH) }

// flock applies the lock how (LOCK_EX or LOCK_SH) to f without waiting.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EWOULDBLOCK:
			return ErrHeld
		}
		return err
	}
}

// Unlock releases the lock taken by Lock or LockShared.
func Unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
