package llm

import (
	"net/http"
	"time"
)

// ClassifyAnswer returns what [Client.Do] returns for an answer with this
// status and body that arrived by some other way than a live exchange, such
// as one line of a Batch API output file:
//   - (resp, nil) for a 2xx status with a usable chat completion;
//   - (nil, *APIError) for any other status, classified by status and body
//     as online answers are, or for a 2xx body that is not a usable chat
//     completion (Transient, as online).
//
// requestID, when not "", becomes the response's X-Request-Id. There are no
// headers, so an error's RetryAfter comes from the body alone.
func ClassifyAnswer(status int, requestID string, body []byte) (*Response, *APIError) {
	h := http.Header{}
	if requestID != "" {
		h.Set("X-Request-Id", requestID)
	}
	if status < 200 || status > 299 {
		return nil, classify(status, h, body, time.Time{}) // no Date or Retry-After header: now is unused
	}
	resp, err := parseOK(&http.Response{StatusCode: status, Header: h}, body)
	if err != nil {
		return nil, err.(*APIError) // parseOK fails only with an *APIError
	}
	return resp, nil
}

// ClassifyLineError classifies an error that came with no response at all,
// such as a Batch API line's {"code":"batch_expired"}: as a server-side
// failure (Transient), unless its words say otherwise (a spent quota, say).
// Code and message are kept fit to print, as every APIError's are.
func ClassifyLineError(code, message string) *APIError {
	code, message = printable(code, maxCode), printable(message, maxMessage)
	return &APIError{Kind: kindOf(http.StatusInternalServerError, code, message), Code: code, Message: message}
}
