package checkpoint

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWriteErrorSticks makes the file refuse writes under an open journal, and checks that Append, Sync
// and Close report it from then on instead of carrying on behind a hole.
func TestWriteErrorSticks(t *testing.T) {
	tests := []struct {
		name string
		fail func(j *Journal) error // provokes the first error
	}{
		{"sync", func(j *Journal) error {
			j.Append("a", Done)
			return j.Sync()
		}},
		{"buffer full", func(j *Journal) error {
			for i := 0; ; i++ { // until the buffer must be written out
				if err := j.Append("key-"+strconv.Itoa(i), Done); err != nil {
					return err
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := Open(filepath.Join(t.TempDir(), "x.ckpt"), nil)
			if err != nil {
				t.Fatal(err)
			}
			j.f.Close() // every write and fsync now fails
			first := tt.fail(j)
			if !errors.Is(first, fs.ErrClosed) {
				t.Fatalf("first error = %v, want one wrapping fs.ErrClosed", first)
			}
			if err := j.Append("b", Done); err != first {
				t.Errorf("Append() after a write error = %v, want %v", err, first)
			}
			if _, ok := j.Status("b"); ok {
				t.Error("Status(b) found a key whose Append failed")
			}
			if err := j.Sync(); err != first {
				t.Errorf("Sync() after a write error = %v, want %v", err, first)
			}
			if err := j.Close(); err != first {
				t.Errorf("Close() after a write error = %v, want %v", err, first)
			}
		})
	}
}
