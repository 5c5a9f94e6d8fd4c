package jsonl

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type got struct {
	line     int
	text     string
	complete bool
	tooLong  bool
}

func readAll(t *testing.T, r io.Reader, max int) ([]got, error) {
	t.Helper()
	lr := NewReader(r, max)
	var out []got
	for lr.Next() {
		out = append(out, got{lr.Line(), string(lr.Bytes()), lr.Complete(), lr.TooLong()})
	}
	return out, lr.Err()
}

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // longer than the buffer, and than bufio.Scanner takes
	tests := []struct {
		name  string
		in    string
		max   int
		want  []got
		atEnd int64
	}{
		{"empty", "", 0, nil, 0},
		{"lines", "{}\n{\"a\":1}\n", 0, []got{{1, "{}", true, false}, {2, `{"a":1}`, true, false}}, 11},
		{"CRLF", "a\r\nb\r\n", 0, []got{{1, "a", true, false}, {2, "b", true, false}}, 6},
		{"last line without newline", "a\nb", 0, []got{{1, "a", true, false}, {2, "b", false, false}}, 3},
		{"blank lines count", "\n\na\n", 0, []got{{1, "", true, false}, {2, "", true, false}, {3, "a", true, false}}, 4},
		{"BOM on line 1 only", "\xef\xbb\xbfa\n\xef\xbb\xbfb\n", 0,
			[]got{{1, "a", true, false}, {2, "\xef\xbb\xbfb", true, false}}, 10},
		{"a long line", long + "\nb\n", 0, []got{{1, long, true, false}, {2, "b", true, false}}, int64(len(long)) + 3},
		{"over the limit, skipped", "abcdef\nabc\n" + long + "\nab", 3,
			[]got{{1, "", true, true}, {2, "abc", true, false}, {3, "", true, true}, {4, "ab", false, false}}, int64(len(long)) + 14},
		{"CRLF does not count against the limit", "abc\r\n", 3, []got{{1, "abc", true, false}}, 5},
		{"torn long last line", long, 0, []got{{1, long, false, false}}, int64(len(long))},
		{"torn long last line over the limit", long, 10, []got{{1, "", false, true}}, int64(len(long))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				lr := NewReader(r, tt.max)
				var out []got
				for lr.Next() {
					out = append(out, got{lr.Line(), string(lr.Bytes()), lr.Complete(), lr.TooLong()})
				}
				if lr.Err() != nil {
					t.Fatalf("Err() = %v", lr.Err())
				}
				if !equal(out, tt.want) {
					t.Errorf("lines = %.80v, want %.80v", out, tt.want)
				}
				if lr.Offset() != tt.atEnd {
					t.Errorf("Offset() at the end = %d, want %d", lr.Offset(), tt.atEnd)
				}
			}
		})
	}
}

func equal(a, b []got) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReaderOffsets(t *testing.T) {
	in := "one\ntwo\r\n\nthree"
	lr := NewReader(strings.NewReader(in), 0)
	var offs []int64
	for lr.Next() {
		offs = append(offs, lr.Offset())
	}
	want := []int64{4, 9, 10, 15}
	if len(offs) != len(want) {
		t.Fatalf("offsets = %v, want %v", offs, want)
	}
	for i := range want {
		if offs[i] != want[i] {
			t.Errorf("offsets = %v, want %v", offs, want)
		}
	}
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom))
	out, err := readAll(t, r, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("Err() = %v, want boom", err)
	}
	if len(out) != 1 || out[0].text != "a" {
		t.Errorf("lines before the error = %v, want just a", out)
	}
}

// TestReaderReleasesHugeBuffer checks that a huge line does not pin its
// buffer for the lines after it.
func TestReaderReleasesHugeBuffer(t *testing.T) {
	lr := NewReader(strings.NewReader(strings.Repeat("x", 4<<20)+"\na\nb\n"), 0)
	lr.Next()
	lr.Next()
	lr.Next()
	if cap(lr.buf) > keepBuf {
		t.Errorf("buffer of %d bytes kept after a huge line", cap(lr.buf))
	}
}

// FuzzLines checks the Reader against a plain split of the whole input, for
// any bytes, any limit and reads of one byte or many.
func FuzzLines(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\r\n\nx"), 3, false)
	f.Add([]byte("\xef\xbb\xbf{}\r\n"), 0, true)
	f.Fuzz(func(t *testing.T, in []byte, max int, oneByte bool) {
		max %= 16
		var r io.Reader = bytes.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		out, err := readAll(t, r, max)
		if err != nil {
			t.Fatal(err)
		}
		parts := bytes.SplitAfter(in, []byte("\n"))
		if len(parts[len(parts)-1]) == 0 {
			parts = parts[:len(parts)-1]
		}
		if len(out) != len(parts) {
			t.Fatalf("%d lines, want %d", len(out), len(parts))
		}
		for i, p := range parts {
			want := bytes.TrimSuffix(bytes.TrimSuffix(p, []byte("\n")), []byte("\r"))
			if i == 0 {
				want = bytes.TrimPrefix(want, []byte("\xef\xbb\xbf"))
			}
			g := out[i]
			tooLong := max > 0 && len(want) > max
			switch {
			case g.line != i+1:
				t.Fatalf("line %d numbered %d", i+1, g.line)
			case g.complete != bytes.HasSuffix(p, []byte("\n")):
				t.Fatalf("line %d: Complete() = %v", i+1, g.complete)
			case g.tooLong != tooLong:
				t.Fatalf("line %d (%d bytes, limit %d): TooLong() = %v", i+1, len(want), max, g.tooLong)
			case !tooLong && g.text != string(want):
				t.Fatalf("line %d = %q, want %q", i+1, g.text, want)
			}
		}
	})
}
