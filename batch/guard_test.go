package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepairTail(t *testing.T) {
	long := "{" + strings.Repeat("x", 100_000) // longer than repairTail's read block
	tests := []struct {
		name, file, want string
	}{
		{"empty", "", ""},
		{"ends with newline", "a\nb\n", "a\nb\n"},
		{"torn", "a\nb\n{\"id\":", "a\nb\n"},
		{"no newline at all", "{\"id\":\"t-1\"", ""},
		{"only a newline", "\n", "\n"},
		{"torn long line", "a\n" + long, "a\n"},
		{"long lines", long + "\n" + long, long + "\n"},
		{"newline at a block edge", strings.Repeat("y", 32<<10-1) + "\n" + long, strings.Repeat("y", 32<<10-1) + "\n"},
		{"NUL tail", "a\nb\n" + nuls(4096), "a\nb\n"},
		{"torn line then NULs", "a\nb\n{\"id\":" + nuls(100), "a\nb\n"},
		{"lines of NULs", "a\n" + nuls(3) + "\n" + nuls(1) + "\n", "a\n"},
		{"NULs then a line", "a\n" + nuls(8) + `{"id":"t-2"}` + "\n", "a\n"},
		{"line with a NUL, then torn", "a\nb\x00c\n{", "a\n"},
		{"long NUL line", "a\n" + nuls(100_000) + "\n", "a\n"},
		{"NUL line at a block edge", "a\n" + nuls(32<<10-1) + "\n" + long, "a\n"},
		{"sound line after a NUL line", "a\n\x00\nb\n", "a\n\x00\nb\n"},
		{"only NULs", nuls(10), ""},
		{"first line NULs", nuls(2) + "\n" + nuls(2), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			writeTestFile(t, path, []byte(tt.file))
			cut, err := repairTail(path)
			if err != nil {
				t.Fatalf("repairTail() = %v", err)
			}
			if want := int64(len(tt.file) - len(tt.want)); cut != want {
				t.Errorf("repairTail() cut %d bytes, want %d", cut, want)
			}
			if got := string(readTestFile(t, path)); got != tt.want {
				t.Errorf("after repairTail the file holds %d bytes %.20q, want %d bytes %.20q", len(got), got, len(tt.want), tt.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		cut, err := repairTail(filepath.Join(t.TempDir(), "missing.jsonl"))
		if cut != 0 || err != nil {
			t.Errorf("repairTail(missing) = %d, %v; want 0, nil", cut, err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		if _, err := repairTail(t.TempDir()); err == nil {
			t.Error("repairTail(directory) = nil error")
		}
	})
}

// TestRepairTailRefusesOtherFiles gives repairTail files that are not what a crash leaves of a JSONL file:
// a path given by mistake. It must refuse them with ErrNotJSONL and change nothing.
func TestRepairTailRefusesOtherFiles(t *testing.T) {
	long := strings.Repeat("z", 100_000)
	for name, file := range map[string]string{
		"text without a final newline": "my notes\nthe last line",
		"a single line of text":        "hello",
		"a long last line of text":     "a\n" + long,
		"text after a NUL line":        "a\n\x00\x00\nplain text",
		"a space before the brace":     `{"id":"a"}` + "\n" + ` {"id":`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "notes.txt")
			writeTestFile(t, path, []byte(file))
			cut, err := repairTail(path)
			if !errors.Is(err, ErrNotJSONL) || cut != 0 {
				t.Errorf("repairTail() = %d, %v; want 0 and an error wrapping ErrNotJSONL", cut, err)
			}
			if got := string(readTestFile(t, path)); got != file {
				t.Errorf("repairTail() changed the file to %.40q", got)
			}
		})
	}
}

// nuls returns n NUL bytes: what a power loss leaves where a file grew but its data never reached the disk.
func nuls(n int) string { return strings.Repeat("\x00", n) }

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOutputLock: a second run cannot take the results file's lock while
// the first holds it, and can once it is released.
func TestOutputLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	l, err := lockOutput(path)
	if err != nil {
		t.Fatal(err)
	}
	var se *SetupError
	if _, err := lockOutput(path); !errors.As(err, &se) || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second lockOutput(%s) = %v, want a *SetupError saying it is locked", path, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	l2, err := lockOutput(path)
	if err != nil {
		t.Fatalf("lockOutput after Close: %v", err)
	}
	l2.Close()
}
