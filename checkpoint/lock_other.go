//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package checkpoint

import (
	"errors"
	"os"
)

// errLockHeld is returned by lock when someone else holds the lock.
var errLockHeld = errors.New("lock held")

// lock does nothing on systems without flock or LockFileEx (illumos, AIX, Plan 9, WebAssembly): there,
// nothing stops two runs from sharing a journal, and the user must not start them.
func lock(*os.File) error { return nil }

// lockShared does nothing, like lock.
func lockShared(*os.File) error { return nil }

// unlock does nothing, like lock.
func unlock(*os.File) error { return nil }
