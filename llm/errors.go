package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Kind says what the caller should do about a failed request.
type Kind int

const (
	Transient   Kind = iota + 1 // 408, 409, 5xx, reset, timeout, truncated or unusable body: back off, retry
	RateLimited                 // 429 (rate limit): pause every worker until the hint passes, then retry
	BadRequest                  // 400, 404, 422: the item is at fault; record it, go on
	TooLarge                    // 400/413 for size: split the group or give up on the item
	Auth                        // 401, 403: stop the run (exit 3)
	QuotaSpent                  // 402, 429 insufficient_quota and the like: stop the run (exit 3)
)

var kindNames = map[Kind]string{
	Transient:   "transient",
	RateLimited: "rate_limited",
	BadRequest:  "bad_request",
	TooLarge:    "too_large",
	Auth:        "auth",
	QuotaSpent:  "quota_spent",
}

// String returns the name used in the errors file, such as "bad_request".
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Retryable reports whether a request that failed this way may be sent again.
func (k Kind) Retryable() bool { return k == Transient || k == RateLimited }

// StopsRun reports whether no further request can succeed (bad key, spent quota).
func (k Kind) StopsRun() bool { return k == Auth || k == QuotaSpent }

// An APIError is returned for every failed attempt: a non-2xx response, an
// unusable 2xx body, or a transport failure (Status 0). It never holds the key
// or request headers.
type APIError struct {
	Status     int           // HTTP status code; 0 when no response arrived
	Kind       Kind          // what to do next
	Code       string        // provider's code, e.g. "insufficient_quota"
	Message    string        // provider's message, or what went wrong
	RetryAfter time.Duration // the server's hint; 0 when it gave none
	Err        error         // the transport cause, if any
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d ", e.Status)
	}
	b.WriteString(e.Kind.String())
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the transport cause, if any.
func (e *APIError) Unwrap() error { return e.Err }

// ErrStopped is returned by waits when the [Limiter] has been closed: the run
// takes no new work.
var ErrStopped = errors.New("llm: stopped: no new requests are sent")

// classify turns a non-2xx response into an APIError. now is the local time
// the response arrived, used for hints given as dates.
func classify(status int, h http.Header, body []byte, now time.Time) *APIError {
	e := &APIError{Status: status}
	e.Code, e.Message = errorDetails(body)
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	e.Kind = kindOf(status, e.Code, e.Message)
	e.RetryAfter = retryHint(h, body, now)
	return e
}

func kindOf(status int, code, msg string) Kind {
	lower := strings.ToLower(code + " " + msg)
	switch {
	case status == 401 || status == 403:
		return Auth
	case status == 402 || quotaWords(lower):
		return QuotaSpent
	case status == 429:
		return RateLimited
	case status == 413 || (status == 400 && tooLargeWords(lower)):
		return TooLarge
	case status == 408 || status == 409 || status >= 500:
		return Transient
	default:
		return BadRequest
	}
}

func quotaWords(s string) bool {
	for _, w := range []string{"insufficient_quota", "insufficient balance", "insufficient_balance",
		"quota exceeded", "exceeded your current quota", "billing_hard_limit", "accountoverdue", "account is overdue"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func tooLargeWords(s string) bool {
	for _, w := range []string{"context_length_exceeded", "maximum context length", "too long", "too large", "too many tokens", "reduce the length"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// errorDetails reads the provider's code and message from an error body:
// OpenAI's {"error":{...}}, or a flat {"code":..,"message":..}.
func errorDetails(body []byte) (code, msg string) {
	var eb ErrorBody
	if json.Unmarshal(body, &eb) == nil && (eb.Error.Message != "" || len(eb.Error.Code) > 0) {
		return rawString(eb.Error.Code, eb.Error.Type), eb.Error.Message
	}
	var flat struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Msg     string          `json:"msg"`
	}
	if json.Unmarshal(body, &flat) == nil && (flat.Message != "" || flat.Msg != "") {
		return rawString(flat.Code, ""), flat.Message + flat.Msg
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if strings.HasPrefix(s, "<") {
		s = "non-JSON error page"
	}
	return "", s
}

func rawString(raw json.RawMessage, fallback string) string {
	if len(raw) == 0 || string(raw) == "null" {
		return fallback
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
