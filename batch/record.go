package batch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/llmbatch/llmbatch/internal/textclip"
	"github.com/llmbatch/llmbatch/llm"
)

// Item is one unit of work read from the input.
type Item struct {
	ID    string // the user's id (custom_id for OpenAI Batch lines)
	Model string // the model the request names; each model is paced on its own
	Line  int    // 1-based input line
	Body  []byte // the request body, ready to send
	Batch bool   // an OpenAI Batch request line: the result is Batch-shaped

	// The item's token estimate, made once when it is read and used by the
	// token limit, the packer and the dry run alike.
	Tokens       int // the request's: its messages plus MaxOutput, as --tpm counts them
	PromptTokens int // the prompt's alone, for the merge caps; 0 for messages and Batch lines
	MaxOutput    int // max_tokens (or max_completion_tokens); 0 when the body sets none

	// For merging (--merge): only items made of one prompt can share a
	// request, and only with items of the same Group.
	Prompt string // the user prompt; "" when the item cannot be merged
	Group  string // model, system prompt and parameters: items that may share a request

	rejected *LineError // set for a rejected line on its way to the errors file
	fixes    int        // an input line an earlier run rejected, now fixed: its outcome clears the rejection
	onlyFix  bool       // nothing to send: the item only clears the rejection of line fixes
	sentAt   int64      // the run's server answers before its first request, plus one; 0: not sent yet
}

// recordShaper turns input lines into items. It holds the run-wide request
// settings; it is owned by the reader goroutine.
type recordShaper struct {
	model       string
	system      string
	tmpl        *template.Template
	maxTokens   *int
	temperature *float64
	count       func(string) int // counts a text's tokens; nil: llm.EstimateTokens
}

// tokens estimates the tokens of text: the one count behind every estimate.
func (s *recordShaper) tokens(text string) int {
	if s.count == nil {
		return llm.EstimateTokens(text)
	}
	return s.count(text)
}

// estimate returns the tokens of msgs, each with the few that frame a message.
func (s *recordShaper) estimate(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += s.tokens(llm.TextContent(m.Content)) + msgOverhead
	}
	return n
}

// msgOverhead is what a message adds to its text: role and delimiters.
const msgOverhead = 4

// maxOutput returns the max_tokens of a request body, or else its
// max_completion_tokens; 0 when it sets neither.
func maxOutput(body map[string]json.RawMessage) int {
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		var n int
		if json.Unmarshal(body[k], &n) == nil && n > 0 {
			return n
		}
	}
	return 0
}

// shape parses one non-blank line. Errors are causes for a *LineError.
func (s *recordShaper) shape(line []byte) (*Item, string, error) {
	if !utf8.Valid(line) {
		return nil, "", fmt.Errorf("%w (at byte %d)", ErrBadUTF8, invalidUTF8At(line))
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil || rec == nil {
		return nil, "", notJSON(line, err)
	}
	if body, ok := rec["body"]; ok {
		if _, hasMsgs := rec["messages"]; !hasMsgs {
			return s.shapeBatch(rec, body)
		}
	}
	id, err := recordID(rec["id"], line)
	if err != nil {
		return nil, "", err
	}
	it, err := s.chatItem(rec)
	if err != nil {
		return nil, id, err
	}
	it.ID = id
	return it, id, nil
}

// invalidUTF8At returns the offset of the first byte of b that is not part
// of valid UTF-8, counted from 1 as editors do.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i + 1
		}
		i += n
	}
	return 0
}

// notJSON explains why line is not a JSON object: what the decoder said
// and where (bytes counted from 1), or what it is instead.
func notJSON(line []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil: // the line is null
		return fmt.Errorf("%w: got null", ErrNotJSON)
	case errors.As(err, &te):
		return fmt.Errorf("%w: got %s", ErrNotJSON, te.Value)
	case errors.As(err, &se) && se.Offset >= int64(len(line)):
		return fmt.Errorf("%w: the line ends before its JSON does (was the file cut short?)", ErrNotJSON)
	}
	return fmt.Errorf("%w: %v", ErrNotJSON, err)
}

// recordID reads an id given as a string or an integer; a missing id is
// derived from the line's content, so reruns of the same file agree.
func recordID(raw json.RawMessage, line []byte) (string, error) {
	if len(raw) == 0 {
		sum := sha256.Sum256(line)
		return "sha256:" + hex.EncodeToString(sum[:8]), nil
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || s == "" {
			return "", ErrBadID
		}
		return s, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s := string(raw)
		if strings.ContainsAny(s, ".eE") {
			return "", fmt.Errorf("%w (got %s)", ErrBadID, s)
		}
		return s, nil
	}
	return "", fmt.Errorf("%w (got %s)", ErrBadID, textclip.Bytes(string(raw), 40))
}

// chatItem makes the request of a prompt or messages record.
func (s *recordShaper) chatItem(rec map[string]json.RawMessage) (*Item, error) {
	msgs, prompt, system, err := s.messages(rec)
	if err != nil {
		return nil, err
	}
	body, model, err := s.settings(rec)
	if err != nil {
		return nil, err
	}
	it := &Item{Model: model, MaxOutput: maxOutput(body)}
	if prompt == "" {
		it.Tokens = s.estimate(msgs) + it.MaxOutput
	} else {
		// As estimate would make it, without decoding a long prompt again.
		it.PromptTokens = s.tokens(prompt)
		it.Tokens = it.PromptTokens + msgOverhead + s.estimate(msgs[:len(msgs)-1]) + it.MaxOutput
		if mergeable(body) {
			it.Prompt, it.Group = prompt, groupKey(body, system)
		}
	}
	delete(body, "messages") // params cannot set them
	if it.Body, err = encodeObject(body, msgs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	return it, nil
}

// messages returns a record's messages, its system prompt first when it
// has one, its prompt ("" for a record of messages) and its system prompt.
func (s *recordShaper) messages(rec map[string]json.RawMessage) (msgs []llm.Message, prompt, system string, err error) {
	if raw, ok := rec["messages"]; ok {
		if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
			return nil, "", "", fmt.Errorf("%w: messages must be a non-empty array of {role, content}", ErrNoPrompt)
		}
	} else {
		if prompt, err = s.prompt(rec); err != nil {
			return nil, "", "", err
		}
		content := rec["prompt"] // already a JSON string: spare a long prompt one more encoding
		if s.tmpl != nil {
			content = llm.TextMessage("user", prompt).Content
		}
		msgs = []llm.Message{{Role: "user", Content: content}}
	}
	system = s.system
	if raw, ok := rec["system"]; ok {
		if json.Unmarshal(raw, &system) != nil {
			return nil, "", "", fmt.Errorf("%w: system must be a string", ErrNoPrompt)
		}
	}
	if system != "" && msgs[0].Role != "system" {
		msgs = append([]llm.Message{llm.TextMessage("system", system)}, msgs...)
	}
	return msgs, prompt, system, nil
}

// settings returns the request body a record's params and model make, with
// the run's defaults, and the model.
func (s *recordShaper) settings(rec map[string]json.RawMessage) (map[string]json.RawMessage, string, error) {
	body := map[string]json.RawMessage{}
	if raw, ok := rec["params"]; ok {
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, "", fmt.Errorf("%w: params must be a JSON object", ErrNoPrompt)
		}
	}
	model := s.model
	if raw, ok := rec["model"]; ok {
		if json.Unmarshal(raw, &model) != nil {
			return nil, "", fmt.Errorf("%w: model must be a string", ErrNoPrompt)
		}
	}
	if model == "" {
		return nil, "", ErrNoModel
	}
	body["model"], _ = json.Marshal(model)
	setDefault(body, "max_tokens", s.maxTokens)
	setDefault(body, "temperature", s.temperature)
	return body, model, nil
}

// unmergeable are request fields whose meaning a merged request would
// change: several choices, tools, streaming, a stop sequence that would cut
// the JSON answer, a format of the user's own.
var unmergeable = []string{"n", "stop", "stream", "tools", "tool_choice", "functions", "function_call",
	"response_format", "logprobs", "top_logprobs", "prediction", "audio", "modalities"}

func mergeable(body map[string]json.RawMessage) bool {
	for _, k := range unmergeable {
		if _, ok := body[k]; ok {
			return false
		}
	}
	return true
}

// groupKey names the settings a merged request shares: the body without its
// messages, plus the system prompt.
func groupKey(body map[string]json.RawMessage, system string) string {
	rest := make(map[string]json.RawMessage, len(body))
	for k, v := range body {
		if k != "messages" {
			rest[k] = v
		}
	}
	b, _ := json.Marshal(rest) // sorted keys: equal settings give equal keys
	return system + "\x00" + string(b)
}

func setDefault[T any](body map[string]json.RawMessage, key string, v *T) {
	if _, ok := body[key]; ok || v == nil {
		return
	}
	body[key], _ = json.Marshal(*v)
}

func (s *recordShaper) prompt(rec map[string]json.RawMessage) (string, error) {
	if s.tmpl != nil {
		fields := map[string]any{}
		for k, raw := range rec {
			var v any
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if err := d.Decode(&v); err == nil {
				fields[k] = v
			}
		}
		var b strings.Builder
		if err := s.tmpl.Execute(&b, fields); err != nil {
			return "", fmt.Errorf("%w: %v", ErrTemplate, err)
		}
		return b.String(), nil
	}
	raw, ok := rec["prompt"]
	if !ok {
		return "", ErrNoPrompt
	}
	var p string
	if json.Unmarshal(raw, &p) != nil || p == "" {
		return "", fmt.Errorf("%w: prompt must be a non-empty string", ErrNoPrompt)
	}
	return p, nil
}

// shapeBatch reads an OpenAI Batch API request line.
func (s *recordShaper) shapeBatch(rec map[string]json.RawMessage, rawBody json.RawMessage) (*Item, string, error) {
	var id string
	if json.Unmarshal(rec["custom_id"], &id) != nil || id == "" {
		return nil, "", fmt.Errorf("%w: a Batch request line needs a string custom_id", ErrBadID)
	}
	if raw, ok := rec["url"]; ok {
		var u string
		_ = json.Unmarshal(raw, &u)
		if !strings.HasSuffix(u, "/chat/completions") {
			return nil, id, fmt.Errorf("%w: url %q: only /v1/chat/completions is supported", ErrNoPrompt, textclip.Bytes(u, 60))
		}
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rawBody, &body); err != nil || body == nil {
		return nil, id, fmt.Errorf("%w: body must be a JSON object", ErrNoPrompt)
	}
	var msgs []llm.Message
	if err := json.Unmarshal(body["messages"], &msgs); err != nil || len(msgs) == 0 {
		return nil, id, fmt.Errorf("%w: body.messages must be a non-empty array", ErrNoPrompt)
	}
	model := s.model
	if raw, ok := body["model"]; ok {
		if json.Unmarshal(raw, &model) != nil {
			return nil, id, fmt.Errorf("%w: body.model must be a string", ErrNoPrompt)
		}
	} else if model == "" {
		return nil, id, ErrNoModel
	}
	body["model"], _ = json.Marshal(model)
	out, err := encodeObject(body, nil)
	if err != nil {
		return nil, id, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	mt := maxOutput(body)
	return &Item{ID: id, Model: model, Body: out, Tokens: s.estimate(msgs) + mt, MaxOutput: mt, Batch: true}, id, nil
}
