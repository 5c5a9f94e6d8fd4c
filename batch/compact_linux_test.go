package batch

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/llmbatch/llmbatch/llm/mock"
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

// TestCompactReadErrorIsAWriteError: a compaction, at the end of a run that
// sent everything, that cannot read the errors file back (here its name
// turned into a symlink loop while the run appended to the file) fails the
// run with a *WriteError (exit 3, rerun), not a *SetupError (exit 2, which
// says nothing was sent).
func TestCompactReadErrorIsAWriteError(t *testing.T) {
	var j *job
	var n atomic.Int64
	ok := mock.New(mock.Config{})
	j = newJob(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad item"}}`)
			return
		}
		// The first item's errors line is with the OS: its worker waited for
		// that before it sent this request.
		errs := ErrorsPath(j.out())
		if err := os.Rename(errs, errs+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(errs, errs); err != nil { // a loop: opening it gives ELOOP
			t.Error(err)
		}
		ok.ServeHTTP(w, r)
	}), prompts(2)...)
	_, err := j.run(func(c *Config) { c.Concurrency = 1 })
	if !errors.As(err, new(*WriteError)) || errors.As(err, new(*SetupError)) || !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("Run() with an errors file that cannot be read back = %v, want a *WriteError of ELOOP", err)
	}
}
