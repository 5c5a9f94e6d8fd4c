package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCountRecords counts as run reads: BOM, CRLF and blank lines, and
// lines longer than any scanner buffer.
func TestCountRecords(t *testing.T) {
	long := `{"id":"x","prompt":"` + strings.Repeat("y", 2<<20) + `"}`
	tests := []struct {
		in   string
		want int64
	}{
		{"", 0},
		{"\xef\xbb\xbf\n \t\r\n", 0},
		{"{}\r\n\n{}", 2},
		{long + "\n" + long, 2},
		{"\xef\xbb\xbf{}\n", 1},
	}
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(p, []byte(tt.in), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := countRecords(t.Context(), p); got != tt.want || err != nil {
			t.Errorf("countRecords(%.30q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
