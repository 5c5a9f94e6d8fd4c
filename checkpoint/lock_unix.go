//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package checkpoint

import (
	"errors"
	"os"
	"syscall"
)

// errLockHeld is returned by lock when someone else holds the lock.
var errLockHeld = errors.New("lock held")

// lock takes an exclusive flock on f without waiting. flock locks belong to the open file description, so a
// second Open in the same process is refused too, and the kernel drops the lock when the process dies,
// however it dies.
func lock(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// lockShared takes a shared flock on f without waiting: it coexists with other shared locks, and fails with
// errLockHeld while lock's exclusive one is held.
func lockShared(f *os.File) error { return flock(f, syscall.LOCK_SH) }

// flock applies the lock how (LOCK_EX or LOCK_SH) to f without waiting.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EWOULDBLOCK:
			return errLockHeld
		}
		return err
	}
}

// unlock releases the lock taken by lock or lockShared.
func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
