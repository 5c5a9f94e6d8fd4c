//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows

package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLock: an exclusive lock shuts out every other open of the file, even
// in the same process; shared locks coexist; Unlock lets the next one in.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, b, c := open(t, path), open(t, path), open(t, path)
	if err := Lock(a); err != nil {
		t.Fatal(err)
	}
	if err := Lock(b); !errors.Is(err, ErrHeld) {
		t.Errorf("Lock of a second open = %v, want ErrHeld", err)
	}
	if err := LockShared(b); !errors.Is(err, ErrHeld) {
		t.Errorf("LockShared while locked = %v, want ErrHeld", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := LockShared(b); err != nil {
		t.Fatalf("LockShared after Unlock = %v", err)
	}
	if err := LockShared(c); err != nil {
		t.Errorf("a second LockShared = %v, want nil", err)
	}
	if err := Lock(a); !errors.Is(err, ErrHeld) {
		t.Errorf("Lock while shared = %v, want ErrHeld", err)
	}
}
