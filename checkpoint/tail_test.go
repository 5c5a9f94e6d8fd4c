package checkpoint_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

func TestRepairTail(t *testing.T) {
	long := strings.Repeat("x", 100_000) // longer than RepairTail's read block
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			writeFile(t, path, []byte(tt.file))
			cut, err := checkpoint.RepairTail(path)
			if err != nil {
				t.Fatalf("RepairTail() = %v", err)
			}
			if want := int64(len(tt.file) - len(tt.want)); cut != want {
				t.Errorf("RepairTail() cut %d bytes, want %d", cut, want)
			}
			if got := string(readFile(t, path)); got != tt.want {
				t.Errorf("after RepairTail the file holds %d bytes %.20q, want %d bytes %.20q", len(got), got, len(tt.want), tt.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		cut, err := checkpoint.RepairTail(filepath.Join(t.TempDir(), "missing.jsonl"))
		if cut != 0 || err != nil {
			t.Errorf("RepairTail(missing) = %d, %v; want 0, nil", cut, err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		if _, err := checkpoint.RepairTail(t.TempDir()); err == nil {
			t.Error("RepairTail(directory) = nil error")
		}
	})
}
