package mock

import (
	"encoding/json"
	"strings"

	"github.com/llmbatch/llmbatch/internal/textclip"
)

// maxEcho is the most bytes of a prompt that [Answer] echoes.
const maxEcho = 200

// Answer returns the deterministic answer to a plain request whose last user
// message text is prompt: "echo: " followed by at most the first 200 bytes
// of prompt, cut at a rune boundary.
func Answer(prompt string) string {
	return "echo: " + cutBytes(prompt, maxEcho)
}

// cutBytes returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutBytes(s string, n int) string { return textclip.Prefix(s, n) }

// estimateTokens is the mock's token estimate: a token per four characters,
// at least one.
func estimateTokens(chars int) int {
	return max(chars/4, 1)
}

// mergedItem is one element of the array a merged request carries.
// ID is kept raw so that it is echoed exactly as sent (string or number).
type mergedItem struct {
	ID    json.RawMessage `json:"id"`
	Input *string         `json:"input"`
}

// mergedResult is one element of a merged answer's "results".
type mergedResult struct {
	ID     json.RawMessage `json:"id"`
	Output string          `json:"output"`
}

// mergedAnswer returns the answer to a merged request whose last user message
// is text: {"results":[{"id":...,"output":Answer(input)},...]} in the items'
// order. It reports false when text holds no array of items.
func mergedAnswer(text string) (string, bool) {
	items := findItems(text)
	if items == nil {
		return "", false
	}
	results := make([]mergedResult, len(items))
	for i, it := range items {
		results[i] = mergedResult{ID: it.ID, Output: Answer(*it.Input)}
	}
	b, err := json.Marshal(struct {
		Results []mergedResult `json:"results"`
	}{results})
	if err != nil { // cannot happen: every ID was validated as a JSON scalar
		return "", false
	}
	return string(b), true
}

// findItems returns the first non-empty JSON array of {"id","input"} objects
// in text, trying each '[' in turn, or nil when there is none. Instructions
// around the array may hold brackets of their own, hence the search.
func findItems(text string) []mergedItem {
	for i := 0; i < len(text); i++ {
		j := strings.IndexByte(text[i:], '[')
		if j < 0 {
			return nil
		}
		i += j
		if !opensObject(text[i+1:]) {
			continue // cheap rejection of "[1]", "[see below]" and the like
		}
		var items []mergedItem
		// A Decoder stops after the first value, so text after the array is
		// no obstacle.
		if json.NewDecoder(strings.NewReader(text[i:])).Decode(&items) == nil && validItems(items) {
			return items
		}
	}
	return nil
}

// opensObject reports whether s, after leading JSON white space, starts with '{'.
func opensObject(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	return s != "" && s[0] == '{'
}

func validItems(items []mergedItem) bool {
	if len(items) == 0 {
		return false
	}
	for _, it := range items {
		if it.Input == nil || len(it.ID) == 0 {
			return false
		}
		switch c := it.ID[0]; {
		case c == '"', c == '-', '0' <= c && c <= '9':
		default:
			return false // null, objects, arrays and booleans are no ids
		}
	}
	return true
}
