package batch

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestCompactWriteErrorSurfaces: a compaction that cannot write its new file
// (the disk full, here /dev/full behind the temporary file's name) fails
// the run with a *WriteError and leaves the errors file as it was.
func TestCompactWriteErrorSurfaces(t *testing.T) {
	j := newJob(t, failingServer(), `{"id":"a","prompt":"one"}`)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	errsPath := ErrorsPath(j.out())
	if err := os.Symlink("/dev/full", errsPath+".tmp"); err != nil {
		t.Fatal(err)
	}
	_, err := j.run(func(c *Config) { c.RetryFailed = true }) // a fails again: two lines to compact
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Run() = %v, want a *WriteError for ENOSPC", err)
	}
	if got := len(lines(t, errsPath)); got != 2 {
		t.Errorf("errors file holds %d lines after the failed compaction, want the 2 it had", got)
	}
}
