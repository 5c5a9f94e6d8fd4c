// Package textclip cuts text to a size without splitting a UTF-8 sequence:
// the one clipper of error messages, log values and echoed prompts.
//
// It imports the standard library only, so that every package of the module
// may use it, llm included (which imports stdlib, x/time/rate and the
// tokenizer, and our own dependency-free internal packages).
package textclip

import "unicode/utf8"

// Mark is appended to a text that was cut.
const Mark = "…"

// Prefix returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence; "" when n <= 0.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Bytes returns s cut to at most n bytes without splitting a UTF-8
// sequence, with [Mark] appended when anything was cut.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + Mark
}

// RunePrefix returns the first n runes of s and whether anything was left
// out, for a caller that marks the cut its own way.
func RunePrefix(s string, n int) (string, bool) {
	runes := 0
	for i := range s {
		if runes == max(n, 0) {
			return s[:i], true
		}
		runes++
	}
	return s, false
}

// Runes returns the first n runes of s, with [Mark] appended when anything
// was cut.
func Runes(s string, n int) string {
	if p, cut := RunePrefix(s, n); cut {
		return p + Mark
	}
	return s
}
