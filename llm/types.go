package llm

import (
	"encoding/json"
	"strings"
)

// Message is one chat message of the OpenAI chat completions wire format.
// Content is kept raw so that multi-part content (arrays of parts) passes
// through unchanged; use [TextContent] to read it as text.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// TextMessage returns a message whose content is the JSON string s.
func TextMessage(role, s string) Message {
	b, _ := json.Marshal(s) // a string always marshals
	return Message{Role: role, Content: b}
}

// TextContent returns the text of a message's content: the string itself, or
// the text parts of a multi-part content joined by newlines. Anything else
// (null, a number) reads as "".
func TextContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" { // an image or audio part has no text, and adds no blank line
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ChatRequest is the body of POST /chat/completions. Fields the client does
// not model are carried in Extra and merged into the JSON object on the wire.
type ChatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	MaxTokens      *int            `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// ResponseFormat asks for JSON mode ({"type":"json_object"}).
type ResponseFormat struct {
	Type string `json:"type"`
}

// Usage is the token accounting of one response.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens,omitempty"`
}

// Choice is one completion choice.
type Choice struct {
	Index        int     `json:"index"`
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason"`
}

// ChatResponse is the body of a successful chat completions response.
type ChatResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// ErrorBody is the error envelope OpenAI-compatible servers send with a
// non-2xx status: {"error": {"message": ..., "type": ..., "code": ...}}.
type ErrorBody struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code,omitempty"`
		Param   string          `json:"param,omitempty"`
	} `json:"error"`
}
