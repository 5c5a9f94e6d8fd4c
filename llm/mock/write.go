package mock

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/llmbatch/llmbatch/llm"
)

// apiError is the content of an OpenAI-style error body. An empty Code is
// sent as null, as OpenAI does for some errors.
type apiError struct {
	Message string
	Type    string
	Code    string
	Param   string // the offending request field, if any
}

var (
	// errBadKey never includes the key that was sent: the mock's output may
	// land in logs.
	errBadKey = apiError{
		Message: "Incorrect API key provided. You can find your API key at your provider's console.",
		Type:    "invalid_request_error",
		Code:    "invalid_api_key",
	}
	errQuota = apiError{
		Message: "You exceeded your current quota, please check your plan and billing details.",
		Type:    "insufficient_quota",
		Code:    "insufficient_quota",
	}
	errCancelled = apiError{
		Message: "The client closed the request before it was answered.",
		Type:    "invalid_request_error",
		Code:    "request_cancelled",
	}
)

// faultErrors are the bodies of the injected faults, by status.
var faultErrors = map[int]apiError{
	http.StatusInternalServerError: {Message: "The server had an error while processing your request. Sorry about that!", Type: "server_error", Code: "server_error"},
	http.StatusBadGateway:          {Message: "Bad gateway.", Type: "server_error", Code: "bad_gateway"},
	http.StatusServiceUnavailable:  {Message: "The engine is currently overloaded, please try again later.", Type: "server_error", Code: "engine_overloaded"},
}

// statusClientClosed is nginx's status for a request whose client went away;
// nobody reads it, but a recorder in a test sees something other than 200.
const statusClientClosed = 499

// writeError writes e as {"error":{"message":...,"type":...,"code":...}}.
func writeError(w http.ResponseWriter, status int, e apiError) {
	var body llm.ErrorBody
	body.Error.Message = e.Message
	body.Error.Type = e.Type
	body.Error.Param = e.Param
	body.Error.Code = json.RawMessage("null")
	if e.Code != "" {
		body.Error.Code, _ = json.Marshal(e.Code) // a string always marshals
	}
	writeJSON(w, status, &body)
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

// putBuf returns buf to the pool, unless a rare huge body made it too big to keep.
func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		buf.Reset()
		bufPool.Put(buf)
	}
}

// writeJSON writes v as the JSON body of a response with status. The body is
// encoded into a pooled buffer first so that Content-Length can be set and a
// failed encoding turns into a 500 rather than half a body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := getBuf()
	defer putBuf(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		http.Error(w, `{"error":{"message":"mock: cannot encode the answer","type":"server_error","code":null}}`,
			http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = []string{"application/json"}
	hdr["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()) // the client's problem if it went away
}

// writeBody writes body as is, with status and contentType, for the 429s
// of servers that do not answer in JSON.
func writeBody(w http.ResponseWriter, status int, contentType, body string) {
	hdr := w.Header()
	hdr["Content-Type"] = []string{contentType}
	hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
