package batch

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, input string, max int) (lines []string, nums []int, errs []error) {
	t.Helper()
	lr := newLineReader(strings.NewReader(input), max)
	for {
		b, n, err := lr.next()
		if err == io.EOF {
			return
		}
		var le *LineError
		if errors.As(err, &le) {
			errs = append(errs, err)
			nums = append(nums, n)
			lines = append(lines, "<error>")
			continue
		}
		if err != nil {
			t.Fatalf("next() error = %v", err)
		}
		lines = append(lines, string(b))
		nums = append(nums, n)
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // longer than the bufio buffer and any 64 KiB scanner
	tests := []struct {
		name  string
		input string
		max   int
		want  []string
	}{
		{"lf", "a\nb\n", 1 << 20, []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", 1 << 20, []string{"a", "b"}},
		{"no final newline", "a\nb", 1 << 20, []string{"a", "b"}},
		{"bom", "\xef\xbb\xbfa\nb\n", 1 << 20, []string{"a", "b"}},
		{"bom only on line 1", "a\n\xef\xbb\xbfb\n", 1 << 20, []string{"a", "\xef\xbb\xbfb"}},
		{"blank lines kept", "a\n\n\nb\n", 1 << 20, []string{"a", "", "", "b"}},
		{"empty", "", 1 << 20, nil},
		{"long line", long + "\nb\n", 1 << 20, []string{long, "b"}},
		{"too long, then more", long + "\nb\n", 1 << 10, []string{"<error>", "b"}},
		{"too long at end without newline", "a\n" + long, 1 << 10, []string{"a", "<error>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, nums, _ := readAll(t, tt.input, tt.max)
			if len(got) != len(tt.want) {
				t.Fatalf("read %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %.40q, want %.40q", i+1, got[i], tt.want[i])
				}
				if nums[i] != i+1 {
					t.Errorf("line %d numbered %d", i+1, nums[i])
				}
			}
		})
	}
}

func TestLineReaderTooLongIsNotKept(t *testing.T) {
	_, _, errs := readAll(t, strings.Repeat("y", 5<<20)+"\n", 1<<10)
	if len(errs) != 1 || !errors.Is(errs[0], ErrTooLong) {
		t.Fatalf("errors = %v, want one ErrTooLong", errs)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"", "a\n", "\xef\xbb\xbf{\"id\":1}\r\n\n{", strings.Repeat("z", 3000) + "\nq"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lr := newLineReader(bytes.NewReader(data), 1024)
		shaper := &recordShaper{model: "m"}
		last := 0
		for {
			b, n, err := lr.next()
			if err == io.EOF {
				break
			}
			if n <= last {
				t.Fatalf("line numbers must rise: %d after %d", n, last)
			}
			last = n
			if err != nil {
				continue
			}
			if bytes.ContainsAny(b, "\n") {
				t.Fatalf("line %d holds a newline", n)
			}
			if it, _, err := shaper.shape(b); err == nil && it.ID == "" {
				t.Fatalf("line %d accepted without an id", n)
			}
		}
	})
}
