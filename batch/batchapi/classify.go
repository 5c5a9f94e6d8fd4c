package batchapi

import (
	"encoding/json"
	"errors"
	"fmt"

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
// line: not JSON of that shape, or without a custom_id.
var ErrResultLine = errors.New("batchapi: not a batch result line")

// Classify reads one line of a batch's output or error file, in OpenAI's
// shape {"id","custom_id","response":{"status_code","body"},"error"}, and
// classifies it with [ClassifyLine]. It returns an error wrapping
// [ErrResultLine], and no Result, for a line that is not of that shape or
// has no custom_id: such a line cannot be matched to an item, whose line
// stays without a result. (A whole file is read with llm.ReadBatchResults,
// whose lines go to ClassifyLine.)
func Classify(line []byte) (Result, error) {
	var l llm.BatchResultLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrResultLine, err)
	}
	if l.CustomID == "" {
		return Result{}, fmt.Errorf("%w: no custom_id", ErrResultLine)
	}
	return ClassifyLine(l), nil
}

// ClassifyLine says what a result line means, by llm's reading of it
// ([llm.BatchResultLine.Result]), which classifies it as an online answer:
//   - a response with a 2xx status and a usable chat completion is a
//     Success, its Response shaped as an online request's;
//   - any other response is classified by its status and body, and an error
//     object with no response (batch_expired, batch_cancelled) as a
//     server-side failure: a retryable kind is Retry, a kind that stops a
//     run is Halt, any other Permanent;
//   - a line with neither, or whose response has no status, is Retry.
func ClassifyLine(l llm.BatchResultLine) Result {
	if l.Response != nil && l.Response.StatusCode == 0 {
		l.Response = nil // no status: no response to judge; the error object, if any, says more
	}
	res := Result{CustomID: l.CustomID}
	resp, err := l.Result()
	if err == nil {
		res.Response, res.Class = resp, Success
		return res
	}
	if !errors.As(err, &res.Err) { // Result fails only with an *APIError; be safe all the same
		res.Err = &llm.APIError{Kind: llm.Transient, Message: err.Error()}
	}
	res.Class = classOf(res.Err)
	return res
}

// classOf maps llm's verdict to a Class.
func classOf(e *llm.APIError) Class {
	switch {
	case e.Kind.Retryable():
		return Retry
	case e.Kind.StopsRun():
		return Halt
	}
	return Permanent
}
