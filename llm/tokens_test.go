package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want int
	}{
		{"empty", "", 0},
		{"one ASCII byte", "a", 1},
		{"four ASCII bytes", "abcd", 1},
		{"five ASCII bytes", "abcde", 2},
		{"an English sentence", "Classify: my card was charged twice", 9},
		{"CJK, a token a character", "我的卡被扣了两次", 8},
		{"Japanese", "こんにちは", 5},
		{"mixed", "hello 世界", 2 + 2},
		{"emoji", "👍👍", 2},
		{"invalid UTF-8 counts each byte", "\xff\xfe", 2},
		{"long ASCII", strings.Repeat("x", 4000), 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateTokens(tt.s); got != tt.want {
				t.Errorf("EstimateTokens(%q) = %d, want %d", tt.s, got, tt.want)
			}
		})
	}
}

func TestTextContent(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"string", `"hello"`, "hello"},
		{"escaped string", `"a\nb \u4e16"`, "a\nb 世"},
		{"text parts", `[{"type":"text","text":"one"},{"type":"text","text":"two"}]`, "one\ntwo"},
		{"an image part adds no blank line", `[{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":"caption"}]`, "caption"},
		{"null", `null`, ""},
		{"number", `42`, ""},
		{"nothing", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextContent(json.RawMessage(tt.raw)); got != tt.want {
				t.Errorf("TextContent(%s) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestTextMessage(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "多字节\n"} {
		m := TextMessage("user", s)
		if m.Role != "user" || TextContent(m.Content) != s {
			t.Errorf("TextContent(TextMessage(\"user\", %q).Content) = %q, role %q; want %q, role user",
				s, TextContent(m.Content), m.Role, s)
		}
	}
}
