package mock

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbatch/llmbatch/llm"
)

func TestAnswer(t *testing.T) {
	tests := []struct {
		name, prompt, want string
	}{
		{"empty", "", "echo: "},
		{"short", "hello", "echo: hello"},
		{"200 bytes", strings.Repeat("a", 200), "echo: " + strings.Repeat("a", 200)},
		{"201 bytes", strings.Repeat("a", 201), "echo: " + strings.Repeat("a", 200)},
		{"rune across the cut", strings.Repeat("a", 199) + "é", "echo: " + strings.Repeat("a", 199)},
		{"4-byte runes", strings.Repeat("😀", 60), "echo: " + strings.Repeat("😀", 50)},
		{"3-byte runes", strings.Repeat("中", 100), "echo: " + strings.Repeat("中", 66)},
	}
	for _, tt := range tests {
		if got := Answer(tt.prompt); got != tt.want {
			t.Errorf("%s: Answer(%q) = %q, want %q", tt.name, tt.prompt, got, tt.want)
		}
	}
}

func FuzzCutBytes(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add("😀😀", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := cutBytes(s, n)
		if !strings.HasPrefix(s, got) || len(got) > max(n, 0) && len(got) != len(s) {
			t.Fatalf("cutBytes(%q, %d) = %q: not a prefix of at most n bytes", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("cutBytes(%q, %d) = %q splits a rune", s, n, got)
		}
	})
}

// FuzzPlainString checks that the fast path of readMessages agrees with
// llm.TextContent whenever it is taken.
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"abc"`, `""`, `"a\"b"`, `"é"`, `"\u00e9"`, "\"\xff\"", `[{"type":"text","text":"x"}]`, `null`, `12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		got, ok := plainString(json.RawMessage(raw))
		if want := llm.TextContent(json.RawMessage(raw)); ok && string(got) != want {
			t.Fatalf("plainString(%s) = %q, TextContent = %q", raw, got, want)
		}
	})
}

func TestFindItems(t *testing.T) {
	tests := []struct {
		name string
		text string
		ids  []string // raw ids, nil when no items should be found
	}{
		{"none", "just text", nil},
		{"empty array", "[]", nil},
		{"numbers", "[1, 2]", nil},
		{"null id", `[{"id":null,"input":"x"}]`, nil},
		{"bool id", `[{"id":true,"input":"x"}]`, nil},
		{"object input", `[{"id":"a","input":{}}]`, nil},
		{"unclosed", `[{"id":"a","input":"x"}`, nil},
		{"one", `[{"id":"a","input":"x"}]`, []string{`"a"`}},
		{"spaces and numbers", "[\n  {\"input\": \"x\", \"id\": -3},\n  {\"id\": \"b\", \"input\": \"\"}\n] trailing ]", []string{`-3`, `"b"`}},
		{"nested bracket in input", `x [{"id":"a","input":"[{\"id\":\"z\"}]"}]`, []string{`"a"`}},
		{"second array valid", `[{"id":"a"}] then [{"id":"b","input":"y"}]`, []string{`"b"`}},
		{"inside a code fence", "```json\n[{\"id\":\"q\",\"input\":\"y\"}]\n```", []string{`"q"`}},
	}
	for _, tt := range tests {
		items := findItems(tt.text)
		var ids []string
		for _, it := range items {
			ids = append(ids, string(it.ID))
		}
		if strings.Join(ids, ",") != strings.Join(tt.ids, ",") || (items == nil) != (tt.ids == nil) {
			t.Errorf("%s: findItems(%q) ids = %v, want %v", tt.name, tt.text, ids, tt.ids)
		}
	}
}

// FuzzMergedAnswer checks that any text gives either no merged answer or a
// valid JSON object with one result per item found.
func FuzzMergedAnswer(f *testing.F) {
	f.Add(`Items: [{"id":"a","input":"x"},{"id":2,"input":"y"}] ok`)
	f.Add(`[[{"id":"a","input":"x"}]`)
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := mergedAnswer(text)
		if !ok {
			return
		}
		var v struct {
			Results []struct {
				ID     json.RawMessage
				Output *string
			}
		}
		if err := json.Unmarshal([]byte(got), &v); err != nil || len(v.Results) != len(findItems(text)) {
			t.Fatalf("mergedAnswer(%q) = %s (%v)", text, got, err)
		}
	})
}
