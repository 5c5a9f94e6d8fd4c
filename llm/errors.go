package llm

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/llmbatch/llmbatch/internal/textclip"
)

// Kind says what the caller should do about a failed request.
type Kind int

const (
	Transient   Kind = iota + 1 // 408, 409, 5xx, reset, timeout, truncated or unusable body: back off, retry
	RateLimited                 // 429 (rate limit): pause every worker until the hint passes, then retry
	BadRequest                  // 400, 404, 422: the item is at fault; record it, go on
	TooLarge                    // 400/413 for size, 429 "request too large": split the group or give up on the item
	Auth                        // 401, 403: stop the run (exit 3)
	QuotaSpent                  // 402, 429 insufficient_quota and the like: stop the run (exit 3)
	Certificate                 // TLS cannot be set up: the server's certificate cannot be verified, or it does not speak TLS: stop the run (exit 3)
	Unavailable                 // every attempt has failed transiently for too long: stop the run (exit 3)

	// ModelNotFound is a 404 (or 400) saying the request's model does not
	// exist or is not served: the item names a model the server lacks. Like
	// BadRequest it is the item's fault, not the run's: the item goes to a
	// fallback model, or fails with this kind, keeping the status, code and
	// message the server gave.
	ModelNotFound
	// ResponseFormatUnsupported is a 400 or 422 saying the server or model
	// does not support the request's response_format (JSON mode): a merged
	// request goes again without it; an item that asked for it fails.
	ResponseFormatUnsupported
)

var kindNames = map[Kind]string{
	Transient:   "transient",
	RateLimited: "rate_limited",
	BadRequest:  "bad_request",
	TooLarge:    "too_large",
	Auth:        "auth",
	QuotaSpent:  "quota_spent",
	Certificate: "certificate",
	Unavailable: "unavailable",

	ModelNotFound:             "model_not_found",
	ResponseFormatUnsupported: "response_format_unsupported",
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

// StopsRun reports whether no further request can succeed (bad key, spent
// quota, a server certificate that cannot be trusted).
func (k Kind) StopsRun() bool {
	return k == Auth || k == QuotaSpent || k == Certificate || k == Unavailable
}

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

	header     http.Header // the response's header, for the limiter; nil when none arrived
	tokenLimit bool        // a 429 about tokens rather than requests
	tokenSure  bool        // tokenLimit is decided; if not, settle decides it
	tokensLeft int         // the tokens the server said were left, when that decides
	hintFrom   string      // where RetryAfter came from: "header" or "body"
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

// ErrStopped is returned by [Client.Do] when the request's Drain was closed
// before its next attempt: the run takes no new work.
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
	limits := parseLimits(h, body, now)
	e.RetryAfter, e.hintFrom = limits.retryHint(status)
	if e.Kind == RateLimited {
		e.tokenLimit, e.tokenSure, e.tokensLeft = tokenLimited(limits, body)
	}
	// Classified on what the server said; kept as fit to print.
	e.Code, e.Message = printable(e.Code, maxCode), printable(e.Message, maxMessage)
	return e
}

// tokenLimited tells a 429 for tokens from one for requests, as far as
// the response tells. The windows decide first, in any header style
// parseLimits reads: requests (or requests in flight) spent means requests,
// tokens spent means tokens. A window with tokens left still refuses a
// request bigger than what is left, so then the words of the error decide
// ("tokens per min", OpenAI's "type":"tokens", or the same about requests
// or calls). With no such words, sure is false: only the size of the
// request can settle it (see settle), given the tokens left, left.
func tokenLimited(s serverLimits, body []byte) (tokens, sure bool, left int) {
	spent := func(l limitInfo) bool { return l.Told && l.Remaining == 0 }
	guessed := s.Requests.Guessed && !s.Tokens.Told // a window of no unit said, and none of tokens: it may count them
	if spent(s.Concurrent) || (spent(s.Requests) && !guessed) {
		return false, true, 0
	}
	if spent(s.Tokens) {
		return true, true, 0
	}
	lower := strings.ToLower(string(body[:min(len(body), 2000)]))
	switch {
	case strings.Contains(lower, `"tokens"`) || strings.Contains(lower, "tokens per") ||
		strings.Contains(lower, "tpm") || strings.Contains(lower, "token rate"):
		return true, true, 0
	case strings.Contains(lower, `"requests"`) || strings.Contains(lower, "requests per") ||
		strings.Contains(lower, "rpm") || strings.Contains(lower, "call rate") || strings.Contains(lower, "request rate"):
		return false, true, 0
	}
	if !s.Tokens.Told {
		return false, false, -1 // nothing to weigh it by here: the limiter weighs its size (see pace.Outcome.Unsure)
	}
	return false, false, s.Tokens.Remaining
}

// settle decides a 429 that the response left open (see tokenLimited) by
// the size of the request: one that did not fit the tokens left was
// refused for them; one that did, for something else, taken as requests.
// With no tokens left told, it stays open: taken as requests here, and the
// limiter weighs the request's size against the others'.
func (e *APIError) settle(tokens int) {
	if e.Kind == RateLimited && !e.tokenSure && e.tokensLeft >= 0 {
		e.tokenLimit, e.tokenSure = tokens > e.tokensLeft, true
	}
}

// kindOf decides what a non-2xx response means. A 429's code is trusted over
// its message: "rate_limit_exceeded" is a rate limit even when the message
// speaks of quotas, as per-minute limits often do.
func kindOf(status int, code, msg string) Kind {
	lower := strings.ToLower(code + " " + msg)
	switch {
	case status == 401 || status == 403:
		return Auth
	case status == 402 || (quotaWords(lower) && !rateCode(code)):
		return QuotaSpent
	case status == 429 && strings.Contains(lower, "request too large"):
		// OpenAI's "Request too large for gpt-4o ... on tokens per min":
		// the request needs more than a minute's budget; no wait can help.
		return TooLarge
	case status == 429:
		return RateLimited
	case (status == 404 || status == 400) && modelMissing(status, code, msg, lower):
		return ModelNotFound
	case (status == 400 || status == 422) && responseFormatWords(lower):
		return ResponseFormatUnsupported
	case status == 413 || (status == 400 && tooLargeWords(lower)):
		return TooLarge
	case status == 408 || status == 409 || status >= 500:
		return Transient
	default:
		return BadRequest
	}
}

func rateCode(code string) bool {
	c := strings.ToLower(code)
	return strings.Contains(c, "rate_limit") || strings.Contains(c, "ratelimit")
}

func quotaWords(s string) bool {
	for _, w := range []string{"insufficient_quota", "insufficient balance", "insufficient_balance",
		"quota exceeded", "quotaexceeded", "exceeded your current quota", "billing_hard_limit",
		"accountoverdue", "account is overdue"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// modelMissing reports whether a 404 or 400 says the model is unknown, as
// OpenAI ("The model `x` does not exist", code model_not_found), DeepSeek
// ("Model Not Exist"), Ark (InvalidEndpointOrModel.NotFound), vLLM ("The
// model `x` does not exist.") and Ollama ("model \"x\" not found, try
// pulling it first") say it. A bare 404, with no message but its status
// text, is taken for one too: the chat endpoint exists, so the model does
// not. A 404 with some other message (an HTML page: a wrong base URL) is not.
func modelMissing(status int, code, msg, lower string) bool {
	c := strings.ToLower(code)
	switch {
	case strings.Contains(c, "model_not_found") || strings.Contains(c, "modelnotfound") ||
		strings.Contains(c, "invalidendpointormodel"):
		return true
	case status == 404 && (msg == "" || msg == http.StatusText(404)):
		return true
	}
	if !strings.Contains(lower, "model") {
		return false
	}
	for _, w := range []string{"not found", "does not exist", "not exist", "no such model", "unknown model"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// responseFormatWords reports whether an error speaks of response_format or
// JSON mode, as servers that do not support it say.
func responseFormatWords(s string) bool {
	for _, w := range []string{"response_format", "json_object", "json mode", "json output"} {
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

// errorFields holds the fields error bodies use, raw so that a number where
// a string was expected (vLLM's "code": 400) loses nothing.
type errorFields struct {
	Error   json.RawMessage `json:"error"`
	Code    json.RawMessage `json:"code"`
	Type    json.RawMessage `json:"type"`
	Message json.RawMessage `json:"message"`
	Msg     json.RawMessage `json:"msg"`
}

// errorDetails reads the provider's code and message from an error body:
// OpenAI's {"error":{...}}, a bare {"error":"..."} (Ollama), a flat
// {"code":..,"message":..} (vLLM), any of them as the first element of an
// array (Gemini), or else the body itself, shortened.
func errorDetails(body []byte) (code, msg string) {
	var f errorFields
	if !decodeObject(body, &f) {
		return "", rawMessage(body)
	}
	if s := jsonText(f.Error); s != "" && f.Error[0] == '"' {
		return jsonText(f.Code), s
	}
	if inner := (errorFields{}); decodeObject(f.Error, &inner) {
		return fieldsText(inner)
	}
	if code, msg = fieldsText(f); code == "" && msg == "" {
		return "", rawMessage(body)
	}
	return code, msg
}

func fieldsText(f errorFields) (code, msg string) {
	return cmp.Or(jsonText(f.Code), jsonText(f.Type)), cmp.Or(jsonText(f.Message), jsonText(f.Msg))
}

// errorEnvelope reads the code and message of a body that has an "error"
// field, such as a 2xx answer from a gateway that reports errors that way.
func errorEnvelope(body []byte) (code, msg string, ok bool) {
	var f errorFields
	if !decodeObject(body, &f) || jsonText(f.Error) == "" {
		return "", "", false
	}
	code, msg = errorDetails(body)
	return code, msg, true
}

// decodeObject decodes b, a JSON object or an array whose first element is
// one, into v, and reports whether it could.
func decodeObject(b []byte, v *errorFields) bool {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) != nil || len(list) == 0 {
			return false
		}
		b = bytes.TrimSpace(list[0])
	}
	return len(b) > 0 && b[0] == '{' && json.Unmarshal(b, v) == nil
}

// jsonText returns a JSON string's value, "" for null or nothing, and the
// JSON text of any other value (a numeric code, say).
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// rawMessage describes a body that is not a JSON error: an HTML page (a
// proxy's or a gateway's) by that name, anything else by its first bytes.
func rawMessage(body []byte) string {
	s := strings.TrimSpace(string(body))
	if strings.HasPrefix(s, "<") {
		return "non-JSON error page"
	}
	return textclip.Bytes(s, 300)
}

// maxCode and maxMessage bound what an error keeps of the provider's code
// and message: a server may send megabytes, and each failed item's message
// goes to the errors file and the log.
const (
	maxCode    = 200
	maxMessage = 2000
)

// printable returns s fit for a terminal, a log line and the errors file:
// control characters (escape sequences a hostile server could send to the
// user's terminal, newlines that would forge log lines) become spaces,
// invalid UTF-8 becomes U+FFFD, and the result is clipped to n bytes.
func printable(s string, n int) string {
	s = textclip.Bytes(s, n+3) // first: a body of megabytes is not worth mapping
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return textclip.Bytes(s, n)
}

// certError reports whether err says the server's certificate could not be
// verified: an unknown authority, a wrong host name, an expired certificate.
// Retrying cannot fix these, and going on would mean trusting the server.
func certError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid)
}

// notTLS reports whether err says the server answered a TLS handshake with
// something else, most often plain HTTP: a base URL given as https:// for
// a server that serves http://. Retrying cannot fix it either.
func notTLS(err error) bool {
	var rh tls.RecordHeaderError
	return errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &rh)
}
