//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package filelock

import "os"

// Lock does nothing on systems without flock or LockFileEx (illumos, AIX, Plan 9, WebAssembly): there,
// nothing stops two runs from sharing a file, and the user must not start them.
func Lock(*os.File) error { return nil }

// LockShared does nothing, like Lock.
func LockShared(*os.File) error { return nil }

// Unlock does nothing, like Lock.
func Unlock(*os.File) error { return nil }
