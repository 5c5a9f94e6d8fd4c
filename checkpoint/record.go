package checkpoint

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A record line is {"k":"<key>","s":"<status>"}. Append writes exactly this shape, which replay reads without
// encoding/json; any other valid JSON object with a string "k" and a one-letter "s" is read through
// encoding/json, so a journal touched by another tool still replays.
const (
	recPrefix = `{"k":"`
	recMiddle = `","s":"`
	recSuffix = `"}`
)

// keyHash identifies a key in memory: 128 bits of SHA-256, so millions of keys cost 17 bytes each plus map
// overhead, and an accidental collision (which would skip an item) is out of reach.
type keyHash [16]byte

// hashKey returns the hash of key as it reads back from JSON: a byte that is not valid UTF-8 stands for
// U+FFFD, as encoding/json decodes and encodes it. Keys that differ only in invalid bytes are the same key.
func hashKey(key []byte) keyHash {
	if !utf8.Valid(key) {
		key = validUTF8(key)
	}
	sum := sha256.Sum256(key)
	return keyHash(sum[:16])
}

// hashString is hashKey for a string. Short keys are copied to the stack, so hashing allocates nothing.
func hashString(key string) keyHash {
	var buf [128]byte
	if len(key) <= len(buf) {
		return hashKey(append(buf[:0], key...))
	}
	return hashKey([]byte(key))
}

// keyString returns key as a string, as it reads back from JSON (see hashKey).
func keyString[K string | []byte](key K) string {
	if b := []byte(key); !utf8.Valid(b) {
		return string(validUTF8(b))
	}
	return string(key)
}

// validUTF8 replaces each byte of b that is not part of valid UTF-8 with U+FFFD.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// appendRecord appends the record line for key and st, newline included, to dst.
func appendRecord(dst []byte, key string, st Status) []byte {
	dst = append(dst, recPrefix...)
	dst = appendJSONString(dst, key)
	dst = append(dst, recMiddle...)
	dst = append(dst, byte(st))
	dst = append(dst, recSuffix...)
	return append(dst, '\n')
}

// appendJSONString appends the JSON string body of s (without quotes) to dst, escaping what JSON requires and
// writing invalid UTF-8 as \ufffd, as encoding/json does. It allocates only to grow dst.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				start = i + n
			}
			i += n
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

var (
	errRecord = errors.New(`not a record: want {"k":"<key>","s":"d|f|b"}`)
	errStatus = errors.New(`unknown status: want "d", "f" or "b"`)
)

// parseRecord reads a record line (without its newline). The key aliases line when it had nothing to unescape.
func parseRecord(line []byte) (key []byte, st Status, err error) {
	if key, st, ok := parseFast(line); ok {
		return key, st, nil
	}
	var r struct {
		K *string `json:"k"`
		S *string `json:"s"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, 0, err
	}
	if r.K == nil || r.S == nil {
		return nil, 0, errRecord
	}
	if len(*r.S) != 1 || !Status((*r.S)[0]).valid() {
		return nil, 0, errStatus
	}
	return []byte(*r.K), Status((*r.S)[0]), nil
}

// parseFast reads the exact shape appendRecord writes for a key with nothing to escape. ok is false for
// anything else, which parseRecord then hands to encoding/json.
func parseFast(line []byte) (key []byte, st Status, ok bool) {
	const fixed = len(recPrefix) + len(recMiddle) + 1 + len(recSuffix)
	if len(line) < fixed || string(line[:len(recPrefix)]) != recPrefix {
		return nil, 0, false
	}
	tail := line[len(line)-len(recMiddle)-1-len(recSuffix):]
	if string(tail[:len(recMiddle)]) != recMiddle || string(tail[len(recMiddle)+1:]) != recSuffix {
		return nil, 0, false
	}
	st = Status(tail[len(recMiddle)])
	key = line[len(recPrefix) : len(line)-len(tail)]
	if !st.valid() {
		return nil, 0, false
	}
	for _, c := range key {
		if c < 0x20 || c == '"' || c == '\\' {
			return nil, 0, false
		}
	}
	return key, st, true
}
