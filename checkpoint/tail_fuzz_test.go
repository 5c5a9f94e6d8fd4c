package checkpoint_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// FuzzRepairTail gives RepairTail any file. It either refuses with
// ErrNotJSONL and leaves the file as it was, or cuts it to a prefix that is
// empty or ends in a newline, having cut only pieces a crash can leave (each
// starts with '{' or holds a NUL); a second call then cuts nothing. Seeds
// are the journals of testdata/ and testdata/fuzz/FuzzRepairTail.
func FuzzRepairTail(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.ckpt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := tempPath(t)
		writeFile(t, path, data)
		cut, err := checkpoint.RepairTail(path)
		got := readFile(t, path)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrNotJSONL) {
				t.Fatalf("RepairTail() = %v, want nil or ErrNotJSONL", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("RepairTail() refused the file, yet changed it")
			}
			return
		}
		if !bytes.HasPrefix(data, got) || int64(len(data)-len(got)) != cut {
			t.Fatalf("RepairTail() = %d: the file is not the original cut by that much", cut)
		}
		if len(got) > 0 && got[len(got)-1] != '\n' {
			t.Fatalf("RepairTail() left a file that does not end in a newline: %q", got[max(0, len(got)-20):])
		}
		for _, piece := range bytes.SplitAfter(data[len(got):], []byte("\n")) {
			if len(piece) > 0 && piece[0] != '{' && piece[0] != '\n' && bytes.IndexByte(piece, 0) < 0 {
				t.Fatalf("RepairTail() cut %q, which a crash does not leave", piece)
			}
		}
		if again, err := checkpoint.RepairTail(path); again != 0 || err != nil {
			t.Fatalf("second RepairTail() = %d, %v; want 0, nil", again, err)
		}
	})
}
