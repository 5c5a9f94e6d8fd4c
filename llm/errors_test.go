package llm

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind Kind
		wantCode string
		wantMsg  string // "" skips the check
	}{
		{"400 plain", 400, `{"error":{"message":"messages must not be empty","type":"invalid_request_error","code":null}}`,
			BadRequest, "invalid_request_error", "messages must not be empty"},
		{"400 context_length_exceeded", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			TooLarge, "context_length_exceeded", ""},
		{"400 maximum context length in message only", 400, `{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens."}}`,
			TooLarge, "", ""},
		{"413", 413, `{"error":{"message":"The request body is larger than 1048576 bytes.","code":"request_too_large"}}`,
			TooLarge, "request_too_large", ""},
		{"413 without body", 413, "", TooLarge, "", "Request Entity Too Large"},
		{"401", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			Auth, "invalid_api_key", "Incorrect API key provided"},
		{"403", 403, `{"error":{"code":"AccountOverdueError","message":"account is overdue"}}`, Auth, "AccountOverdueError", ""},
		{"402 DeepSeek Insufficient Balance", 402, `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`,
			QuotaSpent, "invalid_request_error", "Insufficient Balance"},
		{"429 rate_limit_exceeded", 429, `{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500.","type":"requests","code":"rate_limit_exceeded"}}`,
			RateLimited, "rate_limit_exceeded", ""},
		{"429 rate limit code wins over quota words", 429, `{"error":{"message":"Quota exceeded for requests per minute","code":"rate_limit_exceeded"}}`,
			RateLimited, "rate_limit_exceeded", ""},
		{"429 insufficient_quota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			QuotaSpent, "insufficient_quota", ""},
		{"429 Doubao QuotaExceeded", 429, `{"error":{"code":"QuotaExceeded","message":"free quota used up","type":"TooManyRequests"}}`,
			QuotaSpent, "QuotaExceeded", ""},
		{"429 request too large for the TPM", 429, `{"error":{"message":"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000.","type":"tokens","code":"rate_limit_exceeded"}}`,
			TooLarge, "rate_limit_exceeded", ""},
		{"429 without body", 429, "", RateLimited, "", "Too Many Requests"},
		{"404 OpenAI model_not_found", 404, `{"error":{"message":"The model 'x' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			ModelNotFound, "model_not_found", ""},
		{"400 DeepSeek Model Not Exist", 400, `{"error":{"message":"Model Not Exist","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`,
			ModelNotFound, "invalid_request_error", "Model Not Exist"},
		{"404 Ark InvalidEndpointOrModel", 404, `{"error":{"code":"InvalidEndpointOrModel.NotFound","message":"The model or endpoint doubao-x does not exist or you do not have access to it.","param":"","type":"NotFound"}}`,
			ModelNotFound, "InvalidEndpointOrModel.NotFound", ""},
		{"404 vLLM", 404, `{"object":"error","message":"The model ` + "`llama-9`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			ModelNotFound, "404", ""},
		{"404 Ollama", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, ModelNotFound, "", ""},
		{"404 without body", 404, "", ModelNotFound, "", "Not Found"},
		{"404 HTML page: a wrong URL, not a model", 404, "<html><body>404 page not found</body></html>", BadRequest, "", "non-JSON error page"},
		{"404 other message", 404, `{"error":{"message":"Unknown request URL: POST /v1/chat/complete"}}`, BadRequest, "", ""},
		{"400 about the model's context is not a missing model", 400, `{"error":{"message":"This model's maximum context length is 4096 tokens."}}`, TooLarge, "", ""},
		{"400 OpenAI response_format unsupported", 400, `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}`,
			ResponseFormatUnsupported, "invalid_request_error", ""},
		{"400 DeepSeek JSON output unsupported", 400, `{"error":{"message":"deepseek-reasoner does not support Json Output.","type":"invalid_request_error"}}`,
			ResponseFormatUnsupported, "invalid_request_error", ""},
		{"422 vLLM response_format", 422, `{"object":"error","message":"response_format json_object is not supported","code":422}`,
			ResponseFormatUnsupported, "422", ""},
		{"422", 422, `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`, BadRequest, "", `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`},
		{"408", 408, "", Transient, "", "Request Timeout"},
		{"409", 409, "", Transient, "", ""},
		{"500", 500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`, Transient, "server_error", ""},
		{"502 HTML error page", 502, "<html>\r\n<head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>", Transient, "", "non-JSON error page"},
		{"503", 503, `{"error":{"message":"The engine is currently overloaded"}}`, Transient, "", "The engine is currently overloaded"},
		{"504", 504, "upstream request timeout", Transient, "", "upstream request timeout"},
		{"flat code and message", 400, `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}`,
			BadRequest, "400", "max_tokens must be at least 1"},
		{"flat msg", 500, `{"code":"InternalError","msg":"try later"}`, Transient, "InternalError", "try later"},
		{"code as a number", 429, `{"error":{"code":1302,"message":"rate limit"}}`, RateLimited, "1302", "rate limit"},
		{"param of another type", 400, `{"error":{"message":"bad","code":"x","param":{"name":"temperature"}}}`, BadRequest, "x", "bad"},
		{"error as a string (Ollama)", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, ModelNotFound, "", `model "llama9" not found, try pulling it first`},
		{"error in an array (Gemini)", 400, `[{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}]`, BadRequest, "400", "Invalid JSON payload"},
		{"empty error object", 500, `{"error":{}}`, Transient, "", "Internal Server Error"},
		{"unrelated JSON", 500, `{"ok":false}`, Transient, "", `{"ok":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := classify(tt.status, http.Header{}, []byte(tt.body), time.Now())
			if e.Kind != tt.wantKind || e.Code != tt.wantCode || e.Status != tt.status {
				t.Errorf("classify(%d, %q) = {Status %d, Kind %v, Code %q}, want {Status %d, Kind %v, Code %q}",
					tt.status, tt.body, e.Status, e.Kind, e.Code, tt.status, tt.wantKind, tt.wantCode)
			}
			if tt.wantMsg != "" && e.Message != tt.wantMsg {
				t.Errorf("classify(%d, %q).Message = %q, want %q", tt.status, tt.body, e.Message, tt.wantMsg)
			}
		})
	}
}

func TestClassifyReadsHint(t *testing.T) {
	h := http.Header{"Retry-After": {"7"}}
	e := classify(429, h, nil, time.Now())
	if e.RetryAfter != 7*time.Second {
		t.Errorf("classify(429, Retry-After: 7).RetryAfter = %v, want 7s", e.RetryAfter)
	}
}

func TestClassifyLongBody(t *testing.T) {
	body := "x" + strings.Repeat("é", 400) // two bytes each, from byte 1: a cut at byte 300 splits one
	e := classify(500, http.Header{}, []byte(body), time.Now())
	if !utf8.ValidString(e.Message) || len(e.Message) > 310 {
		t.Errorf("classify(500, x and 800 bytes of é).Message = %d bytes, valid UTF-8 %v; want at most 310, valid",
			len(e.Message), utf8.ValidString(e.Message))
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		kind      Kind
		name      string
		retryable bool
		stopsRun  bool
	}{
		{Transient, "transient", true, false},
		{RateLimited, "rate_limited", true, false},
		{BadRequest, "bad_request", false, false},
		{TooLarge, "too_large", false, false},
		{Auth, "auth", false, true},
		{QuotaSpent, "quota_spent", false, true},
		{Certificate, "certificate", false, true},
		{ModelNotFound, "model_not_found", false, false},
		{ResponseFormatUnsupported, "response_format_unsupported", false, false},
		{Kind(0), "kind(0)", false, false},
		{Kind(99), "kind(99)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.kind.String(); got != tt.name {
				t.Errorf("Kind(%d).String() = %q, want %q", int(tt.kind), got, tt.name)
			}
			if got := tt.kind.Retryable(); got != tt.retryable {
				t.Errorf("%v.Retryable() = %v, want %v", tt.kind, got, tt.retryable)
			}
			if got := tt.kind.StopsRun(); got != tt.stopsRun {
				t.Errorf("%v.StopsRun() = %v, want %v", tt.kind, got, tt.stopsRun)
			}
		})
	}
}

func TestAPIErrorError(t *testing.T) {
	cause := errors.New("connection reset by peer")
	tests := []struct {
		name string
		err  *APIError
		want string
	}{
		{"status, code and message", &APIError{Status: 429, Kind: QuotaSpent, Code: "insufficient_quota", Message: "spent"},
			"llm: HTTP 429 quota_spent (insufficient_quota): spent"},
		{"transport", &APIError{Kind: Transient, Message: cause.Error(), Err: cause},
			"llm: transient: connection reset by peer"},
		{"kind only", &APIError{Kind: BadRequest}, "llm: bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("(%#v).Error() = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	if e := (&APIError{Err: cause}); !errors.Is(e, cause) {
		t.Errorf("errors.Is(&APIError{Err: cause}, cause) = false, want true")
	}
}

func TestCertError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"unknown authority", x509.UnknownAuthorityError{}, true},
		{"wrapped hostname", fmt.Errorf("tls: %w", x509.HostnameError{Host: "api.example.com"}), true},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, true},
		{"reset", errors.New("connection reset by peer"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := certError(tt.err); got != tt.want {
				t.Errorf("certError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
