package batchapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/llmbatch/llmbatch/llm"
)

// Class is what becomes of one line of a batch's output or error file.
type Class int

// The classes of a result line, decided by llm's classification of its
// status and body, as for an online answer.
const (
	Success   Class = iota + 1 // a chat completion: written as the item's result
	Retry                      // 5xx, 429, batch_expired, batch_cancelled: into a later shard, or online
	Permanent                  // any other 4xx: the item goes to the errors file
	Halt                       // auth or a spent quota: counted as Retry, and the job stops (exit 3) once collected
)

var classNames = [...]string{"class(0)", "success", "retry", "permanent", "halt"}

// String returns the class's name, for logs.
func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return fmt.Sprintf("class(%d)", int(c))
	}
	return classNames[c]
}

// A Result is one classified line of a batch's output or error file.
type Result struct {
	CustomID string        // the line's custom_id, by which it is matched to its item
	Class    Class         // what to do with it
	Response *llm.Response // the answer, shaped as llm.Client.Do's; Success only
	Err      *llm.APIError // why the line failed; every class but Success
}

// ErrResultLine is wrapped by [Classify] for a line that is not a result
// line: not JSON, or without a custom_id.
var ErrResultLine = errors.New("batchapi: not a batch result line")

// resultLine is the wire shape of an output or error file's line.
type resultLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"error"`
}

// Classify reads one line of a batch's output or error file, in OpenAI's
// shape {"id","custom_id","response":{"status_code","body"},"error"}, and
// says what it means:
//   - a response with a 2xx status and a usable chat completion is a
//     Success, its Response as an online request's;
//   - any other response is classified by its status and body, and an
//     error object with no response (batch_expired, batch_cancelled) as a
//     server-side failure, both by llm as online failures are: a retryable
//     kind is Retry, a kind that stops a run is Halt, any other Permanent;
//   - a line with neither, or a response without a status, is Retry.
//
// It returns an error wrapping [ErrResultLine], and no Result, for a line
// that is not JSON or has no custom_id: such a line cannot be matched to
// an item, whose line stays without a result.
func Classify(line []byte) (Result, error) {
	var l resultLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrResultLine, err)
	}
	if l.CustomID == "" {
		return Result{}, fmt.Errorf("%w: no custom_id", ErrResultLine)
	}
	res := Result{CustomID: l.CustomID}
	switch r := l.Response; {
	case r != nil && r.StatusCode != 0:
		res.Response, res.Err = llm.ClassifyAnswer(r.StatusCode, r.RequestID, r.Body)
	case l.Error != nil:
		res.Err = llm.ClassifyLineError(text(l.Error.Code), l.Error.Message)
	default:
		res.Err = &llm.APIError{Kind: llm.Transient, Status: http.StatusOK, Message: "batch line has no response status and no error"}
	}
	res.Class = classOf(res.Err)
	return res, nil
}

// classOf maps llm's verdict to a Class.
func classOf(e *llm.APIError) Class {
	switch {
	case e == nil:
		return Success
	case e.Kind.Retryable():
		return Retry
	case e.Kind.StopsRun():
		return Halt
	}
	return Permanent
}

// text returns a JSON string's value, or the JSON text of any other value
// (a numeric code), "" for null or nothing.
func text(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
