package llm

import (
	"net/http"
	"strconv"
	"strings"
)

// A lenient reader of the structured fields (RFC 9651) that the IETF
// rate-limit headers use, and the header lookups the readers share.

// sfMember is a member of a structured-field list or dictionary (RFC
// 9651): a bare item with parameters, or a dictionary key and its value.
type sfMember struct {
	key    string            // the dictionary key, lower case; "" in a list
	value  string            // the bare item, unquoted
	params map[string]string // the parameters by lower-case key; "?1" for a key alone
}

// A field longer than maxField, or members past maxMembers, are not read:
// no server tells that much.
const (
	maxField   = 8 << 10
	maxMembers = 32
)

// get returns the first value of the field name, which must be canonical
// (see fieldsOf): h.Get would check that again on every call.
func get(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// field returns the lines of the field name (canonical) joined into one list.
func field(h http.Header, name string) string { return strings.Join(h[name], ",") }

// parseSF reads v as a list (or a dictionary) of items with parameters,
// leniently: white space anywhere between tokens, tokens or strings as
// names, parameters of any type read as text. Inner lists are skipped.
func parseSF(v string) []sfMember {
	if v == "" {
		return nil
	}
	if len(v) > maxField {
		v = v[:maxField]
	}
	var ms []sfMember
	for _, part := range splitOutside(v, ',', maxMembers) {
		fields := splitOutside(part, ';', maxMembers)
		head := strings.TrimSpace(fields[0])
		if head == "" || head[0] == '(' {
			continue
		}
		m := sfMember{params: map[string]string{}}
		if k, val, ok := strings.Cut(head, "="); ok && head[0] != '"' {
			m.key, head = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(val)
		}
		m.value = unquote(head)
		for _, p := range fields[1:] {
			k, val, ok := strings.Cut(p, "=")
			if !ok {
				val = "?1"
			}
			m.params[strings.ToLower(strings.TrimSpace(k))] = unquote(strings.TrimSpace(val))
		}
		ms = append(ms, m)
	}
	return ms
}

// splitOutside splits s at sep outside double quotes into its first n
// parts; the rest is dropped, not glued to the last.
func splitOutside(s string, sep byte, n int) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			if parts = append(parts, s[start:i]); len(parts) == n {
				return parts
			}
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unquote returns the value of a string ("a \"b\"") or s as it is.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s[1 : len(s)-1]
}
