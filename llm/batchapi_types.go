package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The fixed values of a chat completions batch: the only endpoint and
// completion window the Batch API offers for chat.
const (
	BatchEndpoint = "/v1/chat/completions"
	BatchWindow   = "24h"
)

// FileObject is a file held by the provider, as POST /v1/files and
// GET /v1/files/{id} describe it.
type FileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"` // "file"
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"` // Unix seconds
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"` // "batch" for an input, "batch_output" for an output or error file
}

// BatchStatus is the state of a batch at the provider. A batch moves
// validating → in_progress → finalizing → completed, or ends failed (its
// input file was refused), expired (not finished within the completion
// window) or, after a cancel, cancelling → cancelled.
type BatchStatus string

// The states of a batch.
const (
	BatchValidating BatchStatus = "validating"
	BatchFailed     BatchStatus = "failed"
	BatchInProgress BatchStatus = "in_progress"
	BatchFinalizing BatchStatus = "finalizing"
	BatchCompleted  BatchStatus = "completed"
	BatchExpired    BatchStatus = "expired"
	BatchCancelling BatchStatus = "cancelling"
	BatchCancelled  BatchStatus = "cancelled"
)

// Done reports whether a batch in state s will change no more: completed,
// failed, expired or cancelled. Only then are its output and error files
// complete.
func (s BatchStatus) Done() bool {
	return s == BatchCompleted || s == BatchFailed || s == BatchExpired || s == BatchCancelled
}

// BatchCounts counts a batch's request lines: all of them, those answered
// with success, and those that failed.
type BatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// BatchErrors lists why a batch failed validation.
type BatchErrors struct {
	Object string       `json:"object"` // "list"
	Data   []BatchError `json:"data"`
}

// BatchError is one reason a batch failed validation; Line is the input
// line at fault (1-based), 0 when the fault is not one line's.
type BatchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitzero"`
	Line    int    `json:"line,omitzero"`
}

// Batch is a batch job as the provider describes it. Times are Unix
// seconds, 0 until the event has happened; the file ids are "" until the
// batch is done, and stay "" when there is nothing to put in that file.
type Batch struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"` // "batch"
	Endpoint         string            `json:"endpoint"`
	Errors           *BatchErrors      `json:"errors,omitzero"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           BatchStatus       `json:"status"`
	OutputFileID     string            `json:"output_file_id,omitzero"`
	ErrorFileID      string            `json:"error_file_id,omitzero"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     int64             `json:"in_progress_at,omitzero"`
	ExpiresAt        int64             `json:"expires_at,omitzero"`
	FinalizingAt     int64             `json:"finalizing_at,omitzero"`
	CompletedAt      int64             `json:"completed_at,omitzero"`
	FailedAt         int64             `json:"failed_at,omitzero"`
	ExpiredAt        int64             `json:"expired_at,omitzero"`
	CancellingAt     int64             `json:"cancelling_at,omitzero"`
	CancelledAt      int64             `json:"cancelled_at,omitzero"`
	RequestCounts    BatchCounts       `json:"request_counts"`
	Metadata         map[string]string `json:"metadata,omitzero"`
}

// BatchRequestLine is one line of a batch input file.
type BatchRequestLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"` // "POST"
	URL      string          `json:"url"`    // BatchEndpoint
	Body     json.RawMessage `json:"body"`   // the chat completions request
}

// AppendBatchLine appends to dst the input line that asks for the chat
// completion body (a JSON object) under customID, and a newline.
func AppendBatchLine(dst []byte, customID string, body []byte) ([]byte, error) {
	b, err := json.Marshal(BatchRequestLine{CustomID: customID, Method: http.MethodPost, URL: BatchEndpoint, Body: body})
	if err != nil {
		return dst, fmt.Errorf("llm: batch line %q: %w", customID, err)
	}
	return append(append(dst, b...), '\n'), nil
}

// BatchResultLine is one line of a batch's output or error file: either a
// response (whose status may be an error's) or an error object.
type BatchResultLine struct {
	ID       string          `json:"id"`
	CustomID string          `json:"custom_id"`
	Response *BatchResponse  `json:"response"`
	Error    *BatchLineError `json:"error"`
}

// BatchResponse is the HTTP answer a batch line received.
type BatchResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

// BatchLineError is why a batch line got no response at all, such as
// "batch_expired".
type BatchLineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Result returns what an online request would have returned for the line:
//   - (resp, nil) for a 2xx response with a usable chat completion, shaped
//     as [Client.Do]'s, so that one writer serves both;
//   - (nil, *APIError) otherwise, classified as online errors are: a 4xx
//     or 5xx response by its status and body, an error object (no
//     response) as a server-side failure, Transient unless its words say
//     otherwise (a spent quota), and an unusable body as Transient.
func (l BatchResultLine) Result() (*Response, error) {
	switch r := l.Response; {
	case r == nil && l.Error == nil:
		return nil, &APIError{Kind: Transient, Message: "batch line has neither a response nor an error"}
	case r == nil:
		code, msg := printable(l.Error.Code, maxCode), printable(l.Error.Message, maxMessage)
		return nil, &APIError{Kind: kindOf(http.StatusInternalServerError, code, msg), Code: code, Message: msg}
	case r.StatusCode < 200 || r.StatusCode > 299:
		return nil, classify(r.StatusCode, nil, r.Body, time.Now())
	default:
		h := http.Header{}
		if r.RequestID != "" {
			h.Set("X-Request-Id", r.RequestID)
		}
		return parseOK(&http.Response{StatusCode: r.StatusCode, Header: h}, r.Body)
	}
}

// maxResultLine bounds one line of an output file: a line holds one
// response body, bounded online by MaxBodyBytes, plus its envelope.
const maxResultLine = MaxBodyBytes + 64<<10

// ErrBadResultLine is wrapped by [ReadBatchResults] for a line that is not a
// result line (not JSON, or no custom_id).
var ErrBadResultLine = errors.New("llm: not a batch result line")

// ReadBatchResults reads the output or error file r line by line and calls
// fn for each result line, in file order (which is not the input's order).
// It stops at the first error fn returns and returns it unchanged; a line
// that is not a result line gives an error wrapping [ErrBadResultLine] with
// its line number; a read error is returned as is. Blank lines are skipped.
// It never holds more than one line in memory.
func ReadBatchResults(r io.Reader, fn func(BatchResultLine) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			var l BatchResultLine
			if jerr := json.Unmarshal(line, &l); jerr != nil || l.CustomID == "" {
				return fmt.Errorf("%w: line %d", ErrBadResultLine, n)
			}
			if ferr := fn(l); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line of br without its newline, refusing one
// longer than maxResultLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		frag, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if long = append(long, frag...); len(long) > maxResultLine {
				return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrBadResultLine, maxResultLine)
			}
			continue
		}
		if long != nil {
			frag = append(long, frag...)
		}
		return bytes.TrimSuffix(frag, []byte("\n")), err
	}
}
