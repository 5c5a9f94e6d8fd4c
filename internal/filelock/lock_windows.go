//go:build windows

package filelock

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// LockFileEx is called through the standard syscall package so that filelock needs no module beyond the
// standard library; kernel32.dll is a known DLL, always loaded from the system directory.
var (
	kernel32         = syscall.NewLazyDLL("kernel32.dll")
	procLockFileEx   = kernel32.NewProc("LockFileEx")
	procUnlockFileEx = kernel32.NewProc("UnlockFileEx")
)

const (
	lockfileFailImmediately = 0x1
	lockfileExclusiveLock   = 0x2
	errorLockViolation      = syscall.Errno(33)
)

// Windows byte-range locks are mandatory: a locked byte cannot be read through another handle. So the lock
// covers one byte far past any real end of file, and another process can still read the file.
const lockOffsetHigh = 0x7fffffff

// Lock takes an exclusive LockFileEx lock on f without waiting. It belongs to the handle, so a second lock of the
// file in the same process is refused too, and Windows releases it when the process dies.
func Lock(f *os.File) error { return lockFileEx(f, lockfileExclusiveLock) }

// LockShared takes a shared LockFileEx lock on f without waiting: it coexists with other shared locks, and
// fails with ErrHeld while Lock's exclusive one is held.
func LockShared(f *os.File) error { return lockFileEx(f, 0) }

// lockFileEx locks Lock's byte of f with flags (lockfileExclusiveLock or 0 for shared) without waiting.
func lockFileEx(f *os.File, flags uintptr) error {
	ol := syscall.Overlapped{OffsetHigh: lockOffsetHigh}
	r, _, err := procLockFileEx.Call(f.Fd(), flags|lockfileFailImmediately, 0, 1, 0,
		uintptr(unsafe.Pointer(&ol)))
	if r != 0 {
		return nil
	}
	if errors.Is(err, errorLockViolation) || errors.Is(err, syscall.ERROR_IO_PENDING) {
		return ErrHeld
	}
	return err
}

// Unlock releases the lock taken by Lock or LockShared.
func Unlock(f *os.File) error {
	ol := syscall.Overlapped{OffsetHigh: lockOffsetHigh}
	r, _, err := procUnlockFileEx.Call(f.Fd(), 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	if r != 0 {
		return nil
	}
	return err
}
