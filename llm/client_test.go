package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func noWait(int) time.Duration { return 0 }

// newTestClient returns a client of baseURL with the test key, 3 attempts,
// no backoff and a 5s attempt timeout, as changed by mod.
func newTestClient(t *testing.T, baseURL string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{BaseURL: baseURL, APIKey: testKey, MaxAttempts: 3, Timeout: 5 * time.Second, Backoff: noWait}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	return c
}

func testRequest() *Request {
	return &Request{Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`), Tokens: 10, Label: "t-1"}
}

// checkNoKey fails the test if err's text shows the API key.
func checkNoKey(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), testKey) {
		t.Errorf("error %q shows the API key", err)
	}
}

func attempts(n int) func(*Config) { return func(c *Config) { c.MaxAttempts = n } }

func TestClientDo(t *testing.T) {
	tooBig := `{"choices":[{"message":{"role":"assistant","content":"` + strings.Repeat("x", 2000) + `"}}]}`
	tests := []struct {
		name       string
		replies    []reply
		cfg        func(*Config)
		wantN      int
		wantKind   Kind // 0 for success
		wantStatus int
		wantMsg    string // "" skips the check
	}{
		{name: "success first time", replies: []reply{{}}, wantN: 1},
		{name: "201 is a success", replies: []reply{{status: 201}}, wantN: 1},
		{name: "500 then 200", replies: []reply{{status: 500}, {}}, wantN: 2},
		{name: "429 then 200", replies: []reply{{status: 429, body: `{"error":{"code":"rate_limit_exceeded"}}`}, {}}, wantN: 2},
		{name: "408, 409, 502, 503, 504 then 200",
			replies: []reply{{status: 408}, {status: 409}, {status: 502}, {status: 503}, {status: 504}, {}},
			cfg:     attempts(6), wantN: 6},
		{name: "400 not retried", replies: []reply{{status: 400, body: `{"error":{"message":"bad"}}`}},
			wantN: 1, wantKind: BadRequest, wantStatus: 400, wantMsg: "bad"},
		{name: "400 for size not retried", replies: []reply{{status: 400, body: `{"error":{"code":"context_length_exceeded","message":"too long"}}`}},
			wantN: 1, wantKind: TooLarge, wantStatus: 400},
		{name: "401 not retried", replies: []reply{{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test-***cdef"}}`}},
			wantN: 1, wantKind: Auth, wantStatus: 401},
		{name: "403 not retried", replies: []reply{{status: 403}}, wantN: 1, wantKind: Auth, wantStatus: 403},
		{name: "402 not retried", replies: []reply{{status: 402, body: `{"error":{"message":"Insufficient Balance"}}`}},
			wantN: 1, wantKind: QuotaSpent, wantStatus: 402},
		{name: "429 insufficient_quota not retried", replies: []reply{{status: 429, body: `{"error":{"code":"insufficient_quota","message":"spent"}}`}},
			wantN: 1, wantKind: QuotaSpent, wantStatus: 429},
		{name: "404 not retried", replies: []reply{{status: 404}}, wantN: 1, wantKind: ModelNotFound, wantStatus: 404},
		{name: "422 not retried", replies: []reply{{status: 422}}, wantN: 1, wantKind: BadRequest, wantStatus: 422},
		{name: "max attempts: the last error", replies: []reply{{status: 500}, {status: 502}, {status: 503, body: "overloaded"}},
			wantN: 3, wantKind: Transient, wantStatus: 503, wantMsg: "overloaded"},
		{name: "max attempts of 1", replies: []reply{{status: 500}}, cfg: attempts(1), wantN: 1, wantKind: Transient, wantStatus: 500},
		{name: "429 until attempts run out", replies: []reply{{status: 429}, {status: 429}}, cfg: attempts(2),
			wantN: 2, wantKind: RateLimited, wantStatus: 429},
		{name: "invalid JSON then 200", replies: []reply{{body: `{"choices":[`}, {}}, wantN: 2},
		{name: "empty choices then 200", replies: []reply{{body: `{"choices":[]}`}, {}}, wantN: 2},
		{name: "HTML then 200", replies: []reply{{body: "<html>maintenance</html>"}, {}}, wantN: 2},
		{name: "invalid JSON throughout", replies: []reply{{body: "{"}}, cfg: attempts(1),
			wantN: 1, wantKind: Transient, wantStatus: 200, wantMsg: "response body is not JSON"},
		{name: "HTML throughout", replies: []reply{{body: "\n<!DOCTYPE html>"}}, cfg: attempts(1),
			wantN: 1, wantKind: Transient, wantStatus: 200, wantMsg: "response body is an HTML page, not JSON"},
		{name: "no choices throughout", replies: []reply{{body: `{"choices":[]}`}}, cfg: attempts(1),
			wantN: 1, wantKind: Transient, wantStatus: 200, wantMsg: "response has no choices"},
		{name: "an error envelope with 200", replies: []reply{{body: `{"error":{"code":"busy","message":"try later"}}`}}, cfg: attempts(1),
			wantN: 1, wantKind: Transient, wantStatus: 200, wantMsg: "response has no choices: try later"},
		{name: "an empty error envelope with 200", replies: []reply{{body: `{"error":{}}`}}, cfg: attempts(1),
			wantN: 1, wantKind: Transient, wantStatus: 200, wantMsg: "response has no choices"},
		{name: "truncated body then 200", replies: []reply{{header: map[string]string{"Content-Length": "500"}, body: `{"choices":`}, {}}, wantN: 2},
		{name: "a hanging server: each attempt times out",
			replies: []reply{{hang: true}, {hang: true}},
			cfg:     func(c *Config) { c.Timeout, c.MaxAttempts = 100*time.Millisecond, 2 },
			wantN:   2, wantKind: Transient, wantMsg: "attempt timed out"},
		{name: "a hanging server, then an answer",
			replies: []reply{{hang: true}, {}},
			cfg:     func(c *Config) { c.Timeout = 100 * time.Millisecond },
			wantN:   2},
		{name: "a body trickled past the timeout",
			replies: []reply{{trickle: 20 * time.Millisecond}},
			cfg:     func(c *Config) { c.Timeout, c.MaxAttempts = 100*time.Millisecond, 1 },
			wantN:   1, wantKind: Transient, wantMsg: "attempt timed out"},
		{name: "a body over the cap", replies: []reply{{body: tooBig}},
			cfg:   func(c *Config) { c.MaxBodyBytes, c.MaxAttempts = 1024, 1 },
			wantN: 1, wantKind: Transient, wantStatus: 200, wantMsg: "response body longer than 1024 bytes"},
		{name: "an error body over the cap is cut short", replies: []reply{{status: 400, body: tooBig}},
			cfg:   func(c *Config) { c.MaxBodyBytes = 1024 },
			wantN: 1, wantKind: BadRequest, wantStatus: 400},
		{name: "a body at the cap", replies: []reply{{body: tooBig}},
			cfg:   func(c *Config) { c.MaxBodyBytes = int64(len(tooBig)) },
			wantN: 1},
		{name: "the key echoed in an error is hidden", replies: []reply{{status: 400, body: `{"error":{"message":"bad header: {auth}"}}`}},
			wantN: 1, wantKind: BadRequest, wantStatus: 400, wantMsg: "bad header: Bearer [key]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, tt.replies...)
			c := newTestClient(t, s.URL(), tt.cfg)
			resp, n, err := c.Do(t.Context(), testRequest())
			checkNoKey(t, err)
			if n != tt.wantN {
				t.Errorf("Do() made %d attempts, want %d (err %v)", n, tt.wantN, err)
			}
			if tt.wantKind == 0 {
				if err != nil || resp.Status/100 != 2 || len(resp.Chat.Choices) != 1 {
					t.Fatalf("Do() = %v, want a 2xx response with a choice", err)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Do() = %v, %v, want an *APIError", resp, err)
			}
			if ae.Kind != tt.wantKind || ae.Status != tt.wantStatus {
				t.Errorf("Do() = %v, want Kind %v, Status %d", err, tt.wantKind, tt.wantStatus)
			}
			if tt.wantMsg != "" && ae.Message != tt.wantMsg {
				t.Errorf("Do() = %v, want Message %q", err, tt.wantMsg)
			}
		})
	}
}

func TestClientResponse(t *testing.T) {
	s := scripted(t, reply{header: map[string]string{"x-request-id": "req-42"}})
	resp, _, err := newTestClient(t, s.URL(), nil).Do(t.Context(), testRequest())
	if err != nil {
		t.Fatalf("Do() = %v", err)
	}
	if resp.Status != 200 || resp.RequestID != "req-42" || string(resp.Raw) != okBody ||
		resp.Chat.Usage == nil || resp.Chat.Usage.PromptTokens != 3 || resp.Chat.Choices[0].FinishReason != "stop" {
		t.Errorf("Do() = %+v, want status 200, request id req-42, the raw body, usage and finish reason", resp)
	}
}

// TestClientRequest checks what is sent: the same body on every attempt,
// the key as a bearer token, the JSON headers and the endpoint.
func TestClientRequest(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		wantAuth string
	}{
		{"key", testKey, "Bearer " + testKey},
		{"key with a newline", " " + testKey + "\n", "Bearer " + testKey},
		{"no key", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, reply{status: 500}, reply{status: 429}, reply{})
			c := newTestClient(t, s.URL()+"/", func(c *Config) { c.APIKey, c.UserAgent = tt.key, "llmbatch/test" })
			req := testRequest()
			if _, _, err := c.Do(t.Context(), req); err != nil {
				t.Fatalf("Do() = %v", err)
			}
			for i, r := range s.requests() {
				if !bytes.Equal(r.body, req.Body) {
					t.Errorf("attempt %d sent body %q, want %q", i+1, r.body, req.Body)
				}
				if got := r.header.Get("Authorization"); got != tt.wantAuth {
					t.Errorf("attempt %d sent Authorization %q, want %q", i+1, got, tt.wantAuth)
				}
				if r.method != "POST" || r.path != "/v1/chat/completions" {
					t.Errorf("attempt %d was %s %s, want POST /v1/chat/completions", i+1, r.method, r.path)
				}
				for k, want := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "llmbatch/test"} {
					if got := r.header.Get(k); got != want {
						t.Errorf("attempt %d sent %s %q, want %q", i+1, k, got, want)
					}
				}
			}
		})
	}
}

// TestClientWaitsForHint checks that a retry comes no sooner than the
// server asked, with and without a limiter (which pauses for a 429).
func TestClientWaitsForHint(t *testing.T) {
	const hint = 50 * time.Millisecond
	tests := []struct {
		name    string
		status  int
		limiter bool
	}{
		{"429, no limiter", 429, false},
		{"429, limiter", 429, true},
		{"503, no limiter", 503, false},
		{"503, limiter", 503, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, reply{status: tt.status, header: map[string]string{"retry-after-ms": "50", "Retry-After": "1"}}, reply{})
			c := newTestClient(t, s.URL(), func(c *Config) {
				if tt.limiter {
					c.Limiter = NewLimiter(0, 0)
				}
			})
			if _, n, err := c.Do(t.Context(), testRequest()); err != nil || n != 2 {
				t.Fatalf("Do() = %d attempts, %v; want 2, nil", n, err)
			}
			r := s.requests()
			if gap := r[1].at.Sub(r[0].at); gap < hint {
				t.Errorf("retry after retry-after-ms: 50 came %v after the first attempt, want at least %v", gap, hint)
			}
		})
	}
}

// TestClientRedirect checks that the key goes to the host it was meant for
// and no other, even one on the same address at another port.
func TestClientRedirect(t *testing.T) {
	b := scripted(t, reply{})
	a := scripted(t, reply{status: http.StatusTemporaryRedirect, header: map[string]string{"Location": b.srv.URL + "/v1/chat/completions"}})
	if _, _, err := newTestClient(t, a.URL(), nil).Do(t.Context(), testRequest()); err != nil {
		t.Fatalf("Do() through a redirect = %v", err)
	}
	if got := b.requests()[0].header.Get("Authorization"); got != "" {
		t.Errorf("redirect from %s to %s carried Authorization %q, want none", a.srv.URL, b.srv.URL, got)
	}
	if got := b.requests()[0].body; string(got) != string(testRequest().Body) {
		t.Errorf("redirected request body = %q, want %q", got, testRequest().Body)
	}

	same := scripted(t, reply{status: http.StatusTemporaryRedirect, header: map[string]string{"Location": "/v1/other"}}, reply{})
	if _, _, err := newTestClient(t, same.URL(), nil).Do(t.Context(), testRequest()); err != nil {
		t.Fatalf("Do() through a redirect on the same host = %v", err)
	}
	if got := same.requests()[1].header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("redirect on the same host carried Authorization %q, want the key", got)
	}
}

func TestClientConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, "http://"+addr+"/v1", attempts(2))
	_, n, err := c.Do(t.Context(), testRequest())
	checkNoKey(t, err)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Kind != Transient || ae.Status != 0 || n != 2 {
		t.Fatalf("Do() against a closed port = %d attempts, %v; want 2, a transient *APIError", n, err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Do() against a closed port = %v, want it to wrap ECONNREFUSED", err)
	}
}

func TestClientCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request %s %s reached a server whose certificate is not trusted", r.Method, r.URL)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL+"/v1", nil) // the default transport does not trust the test CA
	_, n, err := c.Do(t.Context(), testRequest())
	checkNoKey(t, err)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Kind != Certificate || n != 1 {
		t.Fatalf("Do() against an untrusted certificate = %d attempts, %v; want 1, a %v *APIError", n, err, Certificate)
	}
	if !ae.Kind.StopsRun() {
		t.Errorf("%v.StopsRun() = false, want true", ae.Kind)
	}
}

func TestClientContext(t *testing.T) {
	t.Run("cancelled mid-request", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := scripted(t, reply{before: cancel, hang: true})
		_, n, err := newTestClient(t, s.URL(), nil).Do(ctx, testRequest())
		if err != context.Canceled || n != 1 {
			t.Errorf("Do() cancelled mid-request = %d attempts, %v; want 1, context.Canceled", n, err)
		}
	})
	t.Run("cancelled during the backoff", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := scripted(t, reply{status: 500})
		c := newTestClient(t, s.URL(), func(c *Config) {
			c.Backoff = func(int) time.Duration { cancel(); return time.Hour }
		})
		_, n, err := c.Do(ctx, testRequest())
		if err != context.Canceled || n != 1 {
			t.Errorf("Do() cancelled during the backoff = %d attempts, %v; want 1, context.Canceled", n, err)
		}
	})
	t.Run("deadline before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), -time.Second)
		defer cancel()
		s := scripted(t)
		_, n, err := newTestClient(t, s.URL(), func(c *Config) { c.Limiter = NewLimiter(0, 0) }).Do(ctx, testRequest())
		if err != context.DeadlineExceeded || n != 0 {
			t.Errorf("Do() past its deadline = %d attempts, %v; want 0, context.DeadlineExceeded", n, err)
		}
	})
}

// TestClientDrainedBetweenAttempts checks that a request drained between
// attempts, whatever it waits for, stops with ErrStopped keeping the last
// error.
func TestClientDrainedBetweenAttempts(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		backoff time.Duration
	}{
		{"during the backoff", 500, time.Hour},
		{"before the next Acquire", 500, 0},
		{"at the lane's pause after a 429", 429, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drain := make(chan struct{})
			s := scripted(t, reply{status: tt.status, header: map[string]string{"Retry-After": "3600"}, before: func() { close(drain) }})
			c := newTestClient(t, s.URL(), func(c *Config) {
				c.Limiter, c.Backoff = NewLimiterConfig(LimiterConfig{Adapt: true}), func(int) time.Duration { return tt.backoff }
			})
			req := testRequest()
			req.Drain = drain
			_, n, err := c.Do(t.Context(), req)
			checkNoKey(t, err)
			var ae *APIError
			if !errors.Is(err, ErrStopped) || !errors.As(err, &ae) || ae.Status != tt.status || n != 1 {
				t.Errorf("Do() drained after a %d = %d attempts, %v; want 1, ErrStopped wrapping the %d",
					tt.status, n, err, tt.status)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name         string
		baseURL      string
		wantEndpoint string // "" when New must fail
	}{
		{"https", "https://api.deepseek.com/v1", "https://api.deepseek.com/v1/chat/completions"},
		{"trailing slash", "http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions"},
		{"no path", "http://localhost:8000", "http://localhost:8000/chat/completions"},
		{"query kept last", "https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01",
			"https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01"},
		{"no scheme", "api.openai.com/v1", ""},
		{"ftp", "ftp://example.com", ""},
		{"empty", "", ""},
		{"no host", "http:///v1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: tt.baseURL})
			switch {
			case tt.wantEndpoint == "" && err == nil:
				t.Errorf("New(Config{BaseURL: %q}) = nil error, want one", tt.baseURL)
			case tt.wantEndpoint != "" && err != nil:
				t.Errorf("New(Config{BaseURL: %q}) = %v, want no error", tt.baseURL, err)
			case err == nil && c.endpoint != tt.wantEndpoint:
				t.Errorf("New(Config{BaseURL: %q}) posts to %q, want %q", tt.baseURL, c.endpoint, tt.wantEndpoint)
			}
		})
	}
	if _, err := New(Config{BaseURL: "ftp://user:hunter2@example.com"}); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("New(Config{BaseURL: ftp://user:hunter2@...}) = %v, want an error without the password", err)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://api.example.com/v1", "https://api.example.com/v1"},
		{"https://user:secret@api.example.com/v1", "https://xxxxx@api.example.com/v1"},
		{"://bad", "(unparsable URL)"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
