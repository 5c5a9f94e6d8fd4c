package batch

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// FuzzRepairTail gives repairTail any file. It either refuses with
// ErrNotJSONL and leaves the file as it was, or cuts it to a prefix that is
// empty or ends in a newline, having cut only pieces a crash can leave (each
// starts with '{' or holds a NUL); a second call then cuts nothing. Seeds
// are below and in testdata/fuzz/FuzzRepairTail.
func FuzzRepairTail(f *testing.F) {
	for _, s := range []string{"", "{\"id\":\"a\"}\n{\"id\":", "a\n\x00\x00", "notes\nmore notes"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		writeTestFile(t, path, data)
		cut, err := repairTail(path)
		got := readTestFile(t, path)
		if err != nil {
			if !errors.Is(err, ErrNotJSONL) {
				t.Fatalf("repairTail() = %v, want nil or ErrNotJSONL", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("repairTail() refused the file, yet changed it")
			}
			return
		}
		if !bytes.HasPrefix(data, got) || int64(len(data)-len(got)) != cut {
			t.Fatalf("repairTail() = %d: the file is not the original cut by that much", cut)
		}
		if len(got) > 0 && got[len(got)-1] != '\n' {
			t.Fatalf("repairTail() left a file that does not end in a newline: %q", got[max(0, len(got)-20):])
		}
		for _, piece := range bytes.SplitAfter(data[len(got):], []byte("\n")) {
			if len(piece) > 0 && piece[0] != '{' && piece[0] != '\n' && bytes.IndexByte(piece, 0) < 0 {
				t.Fatalf("repairTail() cut %q, which a crash does not leave", piece)
			}
		}
		if again, err := repairTail(path); again != 0 || err != nil {
			t.Fatalf("second repairTail() = %d, %v; want 0, nil", again, err)
		}
	})
}
