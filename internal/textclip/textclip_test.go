package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	tests := []struct {
		clip string // "Bytes" or "Runes"
		s    string
		n    int
		want string
	}{
		{"Bytes", "hello", 10, "hello"},
		{"Bytes", "hello", 5, "hello"},
		{"Bytes", "hello", 3, "hel…"},
		{"Bytes", "héllo", 2, "h…"}, // é is two bytes: not split
		{"Bytes", "héllo", 3, "hé…"},
		{"Bytes", "日本語", 4, "日…"},
		{"Bytes", "日本語", 0, "…"},
		{"Bytes", "abc", -1, "…"},
		{"Runes", "hello", 5, "hello"},
		{"Runes", "hello", 2, "he…"},
		{"Runes", "日本語です", 3, "日本語…"},
		{"Runes", "日本語", 3, "日本語"},
		{"Runes", "", 0, ""},
		{"Runes", "a", 0, "…"},
	}
	for _, tt := range tests {
		clip := Bytes
		if tt.clip == "Runes" {
			clip = Runes
		}
		if got := clip(tt.s, tt.n); got != tt.want {
			t.Errorf("%s(%q, %d) = %q, want %q", tt.clip, tt.s, tt.n, got, tt.want)
		}
	}
}

// FuzzClip checks the promises for any text: valid UTF-8 in, valid UTF-8
// out; never longer than asked, but for the mark; a prefix of the input.
func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Add("日本語", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 64
		p := Prefix(s, n)
		if len(p) > max(n, 0) || !strings.HasPrefix(s, p) {
			t.Fatalf("Prefix(%q, %d) = %q", s, n, p)
		}
		if utf8.ValidString(s) && !utf8.ValidString(p) {
			t.Fatalf("Prefix(%q, %d) = %q splits a rune", s, n, p)
		}
		if b := Bytes(s, n); b != s && b != p+Mark {
			t.Fatalf("Bytes(%q, %d) = %q", s, n, b)
		}
		rp, cut := RunePrefix(s, n)
		if !strings.HasPrefix(s, rp) || cut != (rp != s) || utf8.RuneCountInString(rp) > max(n, 0) {
			t.Fatalf("RunePrefix(%q, %d) = %q, %v", s, n, rp, cut)
		}
	})
}
