package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/llmbatch/llmbatch/llm"
)

// maxBody bounds a request body; a larger one gets 413.
const maxBody = 32 << 20

// chat answers POST /v1/chat/completions: decode, admit, wait, then answer
// with a fault or the deterministic completion.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	req, status, bad := decodeRequest(w, r)
	if status != 0 {
		h.badRequests.Add(1)
		writeError(w, status, bad)
		return
	}
	prompt, last := readMessages(req.Messages)
	cost := prompt
	if req.MaxTokens != nil {
		cost += *req.MaxTokens
	}
	model := req.Model
	if model == "" {
		model = h.cfg.Model
	}

	v := h.admit(cost)
	h.setLimitHeaders(w.Header(), v)
	if v.refusal != admitted {
		h.refuse(w, v, model, cost)
		return
	}
	if v.delay > 0 && !sleep(r.Context().Done(), v.delay) {
		h.done(v, false)
		writeError(w, statusClientClosed, errCancelled)
		return
	}
	defer h.done(v, true)
	if v.fault != 0 {
		h.failed.Add(1)
		writeError(w, v.fault, faultErrors[v.fault])
		return
	}

	resp := h.complete(req, model, last, prompt)
	h.ok.Add(1)
	h.promptTokens.Add(int64(resp.Usage.PromptTokens))
	h.completionTokens.Add(int64(resp.Usage.CompletionTokens))
	writeJSON(w, http.StatusOK, resp)
}

// decodeRequest reads and checks the body of a chat request. On failure it
// returns the status and error to answer with.
func decodeRequest(w http.ResponseWriter, r *http.Request) (*llm.ChatRequest, int, apiError) {
	buf := getBuf()
	defer putBuf(buf)
	if status, bad := readBody(w, r, buf); status != 0 {
		return nil, status, bad
	}
	return parseChat(buf.Bytes()) // Unmarshal copies what it keeps, so buf may be reused
}

// parseChat decodes and checks a chat request body, online or a batch line's.
func parseChat(body []byte) (*llm.ChatRequest, int, apiError) {
	req := new(llm.ChatRequest)
	if err := json.Unmarshal(body, req); err != nil {
		return nil, http.StatusBadRequest, apiError{
			Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
			Type:    "invalid_request_error",
			Code:    "invalid_json",
		}
	}
	if len(req.Messages) == 0 {
		return nil, http.StatusBadRequest, apiError{
			Message: "Missing required parameter: 'messages'.",
			Type:    "invalid_request_error",
			Code:    "missing_required_parameter",
			Param:   "messages",
		}
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return nil, http.StatusBadRequest, apiError{
			Message: fmt.Sprintf("Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got %d instead.", *req.MaxTokens),
			Type:    "invalid_request_error",
			Code:    "integer_below_min_value",
			Param:   "max_tokens",
		}
	}
	return req, 0, apiError{}
}

// readBody reads r's body, up to maxBody bytes, into buf.
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) (int, apiError) {
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		return 0, apiError{}
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return http.StatusRequestEntityTooLarge, apiError{
			Message: fmt.Sprintf("The request body is larger than %d bytes.", maxBody),
			Type:    "invalid_request_error",
			Code:    "request_too_large",
		}
	}
	return http.StatusBadRequest, apiError{
		Message: "We could not read the body of your request.",
		Type:    "invalid_request_error",
		Code:    "invalid_body",
	}
}

// readMessages returns the prompt's token estimate (all message text) and the
// text of the last user message ("" when there is none).
func readMessages(msgs []llm.Message) (tokens int, last string) {
	chars, lastUser := 0, -1
	for i, m := range msgs {
		if s, ok := plainString(m.Content); ok {
			chars += utf8.RuneCount(s) // no string to allocate on the hot path
		} else {
			chars += utf8.RuneCountInString(llm.TextContent(m.Content))
		}
		if m.Role == "user" {
			lastUser = i
		}
	}
	if lastUser >= 0 {
		last = llm.TextContent(msgs[lastUser].Content)
	}
	return estimateTokens(chars), last
}

// plainString returns the bytes of raw, a JSON value already checked by the
// decoder, when it is a string that needs no unescaping and is valid UTF-8:
// then they are exactly what [llm.TextContent] would return.
func plainString(raw json.RawMessage) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// complete builds the answer to an admitted request.
func (h *Handler) complete(req *llm.ChatRequest, model, last string, prompt int) *llm.ChatResponse {
	content, merged := "", false
	if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object" {
		content, merged = mergedAnswer(last)
	}
	if !merged {
		content = Answer(last)
	}
	finish := "stop"
	if req.MaxTokens != nil && *req.MaxTokens < estimateTokens(utf8.RuneCountInString(content)) {
		content = cutBytes(content, *req.MaxTokens*4)
		finish = "length"
	}
	completion := estimateTokens(utf8.RuneCountInString(content))
	return &llm.ChatResponse{
		ID:      "chatcmpl-mock-" + strconv.FormatInt(h.ids.Add(1), 10),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []llm.Choice{{
			Message:      llm.TextMessage("assistant", content),
			FinishReason: finish,
		}},
		Usage: &llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
	}
}
