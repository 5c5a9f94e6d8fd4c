// Package durable holds what the packages that write files need to make
// them survive a crash, written once: the fsync of a directory after a file
// was created or renamed in it. Stdlib only.
package durable

import (
	"os"
	"runtime"
)

// SyncDir fsyncs a directory so that a file created or renamed in it
// survives a crash. Windows cannot open a directory for that, and its file
// systems make new entries durable themselves, so there it does nothing.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
