package llm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The hostile servers of issue 6: whatever they do, Do returns within its
// attempts' timeouts with a classified *APIError, shows neither the key nor
// the base URL's credentials, and leaves no goroutine behind.

// secretUser is user info put in base URLs: no error may show its password.
const secretUser = "user:hunter2-pass@"

// rawServer is a TCP listener whose connections are handled by serve, each
// in its own goroutine. Connections still open when the test ends are
// closed, so that serve may block on them.
type rawServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newRawServer(t *testing.T, serve func(net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				serve(c)
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *rawServer) addr() string { return s.ln.Addr().String() }

func (s *rawServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// silentListener accepts nothing: the kernel completes the handshakes and
// queues the connections, and nobody ever reads them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// drain reads the connection until the client closes it.
func drain(c net.Conn) { io.Copy(io.Discard, c) }

// readRequest reads one HTTP request from c, so that what a raw server
// writes next is an answer, not an unsolicited response.
func readRequest(c net.Conn) bool {
	r, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, r.Body)
	return err == nil
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestClientHostileServers(t *testing.T) {
	bomb := gzipped(t, bytes.Repeat([]byte("x"), 1<<20)) // 1 KiB that inflates to 1 MiB
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	tests := []struct {
		name     string
		base     func(t *testing.T) string // the base URL, without its /v1
		timeout  time.Duration
		maxBody  int64
		attempts int
		wantKind Kind // 0: success
		wantMsg  string
		wantN    int
	}{
		{name: "a listener that never accepts", attempts: 2, wantKind: Transient, wantMsg: "attempt timed out", wantN: 2,
			base: func(t *testing.T) string { return "http://" + secretUser + silentListener(t) }},
		{name: "accepts and never answers", attempts: 2, wantKind: Transient, wantMsg: "attempt timed out", wantN: 2,
			base: func(t *testing.T) string { return "http://" + secretUser + newRawServer(t, drain).addr() }},
		{name: "accepts and closes at once", attempts: 2, wantKind: Transient, wantN: 2,
			base: func(t *testing.T) string {
				return "http://" + secretUser + newRawServer(t, func(c net.Conn) { c.Close() }).addr()
			}},
		{name: "answers garbage", attempts: 2, wantKind: Transient, wantN: 2,
			base: func(t *testing.T) string {
				return "http://" + secretUser + newRawServer(t, func(c net.Conn) {
					readRequest(c)
					io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
					drain(c)
				}).addr()
			}},
		{name: "headers trickled forever", attempts: 1, wantKind: Transient, wantMsg: "attempt timed out", wantN: 1,
			base: func(t *testing.T) string {
				return "http://" + secretUser + newRawServer(t, func(c net.Conn) {
					readRequest(c)
					io.WriteString(c, "HTTP/1.1 200 OK\r\n")
					for {
						if _, err := io.WriteString(c, "X-Slow: a\r\n"); err != nil {
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}).addr()
			}},
		{name: "informational answers forever", attempts: 1, wantKind: Transient, wantN: 1,
			base: func(t *testing.T) string {
				return "http://" + secretUser + newRawServer(t, func(c net.Conn) {
					readRequest(c)
					for {
						if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
							return
						}
						time.Sleep(time.Millisecond)
					}
				}).addr()
			}},
		{name: "TLS that never shakes hands", attempts: 2, wantKind: Transient, wantMsg: "attempt timed out", wantN: 2,
			base: func(t *testing.T) string { return "https://" + secretUser + newRawServer(t, drain).addr() }},
		{name: "plain HTTP behind an https URL", attempts: 3, wantKind: Certificate, wantN: 1,
			base: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					t.Errorf("a request reached the server over plain HTTP")
				}))
				t.Cleanup(srv.Close)
				return "https://" + secretUser + strings.TrimPrefix(srv.URL, "http://")
			}},
		{name: "an untrusted certificate", attempts: 3, wantKind: Certificate, wantN: 1,
			base: func(t *testing.T) string {
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					t.Errorf("a request reached a server whose certificate is not trusted")
				}))
				srv.Config.ErrorLog = log.New(io.Discard, "", 0)
				srv.StartTLS()
				t.Cleanup(srv.Close)
				return "https://" + secretUser + strings.TrimPrefix(srv.URL, "https://")
			}},
		{name: "a gzip bomb", attempts: 1, maxBody: 64 << 10, wantKind: Transient, wantN: 1,
			wantMsg: "response body longer than 65536 bytes",
			base: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Encoding", "gzip")
					w.Write(bomb)
				}))
				t.Cleanup(srv.Close)
				return srv.URL
			}},
		{name: "200 with JSON nested too deep", attempts: 1, wantKind: Transient, wantN: 1, wantMsg: "response body is not JSON",
			base: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.WriteString(w, `{"choices":`+deep+`}`)
				}))
				t.Cleanup(srv.Close)
				return srv.URL
			}},
		{name: "a redirect loop", attempts: 1, wantKind: Transient, wantN: 1,
			base: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
				}))
				t.Cleanup(srv.Close)
				return "http://" + secretUser + strings.TrimPrefix(srv.URL, "http://")
			}},
		{name: "a body trickled below the timeout", attempts: 1, timeout: 5 * time.Second, wantN: 1,
			base: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					trickle(r.Context(), w, okBody, time.Millisecond)
				}))
				t.Cleanup(srv.Close)
				return srv.URL
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // the first cleanup runs last, after the servers' own
			timeout := cmpOr(tt.timeout, 300*time.Millisecond)
			c := newTestClient(t, tt.base(t)+"/v1", func(c *Config) {
				c.Timeout, c.MaxAttempts, c.MaxBodyBytes = timeout, tt.attempts, tt.maxBody
			})
			defer c.CloseIdleConnections()
			began := time.Now()
			resp, n, err := c.Do(t.Context(), testRequest())
			took := time.Since(began)
			checkNoKey(t, err)
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Do() = %q: shows the password of the base URL", err)
			}
			if limit := time.Duration(tt.attempts)*timeout + 2*time.Second; took > limit {
				t.Errorf("Do() took %v, want at most %v (%d attempts of %v)", took, limit, tt.attempts, timeout)
			}
			if n != tt.wantN {
				t.Errorf("Do() made %d attempts, want %d (err %v)", n, tt.wantN, err)
			}
			if tt.wantKind == 0 {
				if err != nil || len(resp.Chat.Choices) != 1 {
					t.Fatalf("Do() = %v, want a response with a choice", err)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Do() = %v, want an *APIError", err)
			}
			if ae.Kind != tt.wantKind {
				t.Errorf("Do() = %v, want Kind %v", err, tt.wantKind)
			}
			if tt.wantMsg != "" && ae.Message != tt.wantMsg {
				t.Errorf("Do() = %v, want Message %q", err, tt.wantMsg)
			}
			if ae.Message == "" {
				t.Errorf("Do() = %v: no message", err)
			}
			t.Logf("%d attempts in %v: %v", n, took.Round(time.Millisecond), err)
		})
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// TestClientHostileErrorText checks that what a server says in an error is
// kept fit to print: no terminal escapes or forged log lines, no megabytes.
func TestClientHostileErrorText(t *testing.T) {
	huge := strings.Repeat("y", 1<<20)
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"escape sequences in a JSON message", 401, `{"error":{"message":"bad key\u001b[2J\u001b]0;pwned\u0007","code":"x\u001b[31m"}}`},
		{"escape sequences in a plain body", 500, "overloaded\x1b[2J\r\nlevel=ERROR msg=forged"},
		{"a newline forging a log line", 400, `{"error":{"message":"bad\nlevel=INFO msg=\"all good\""}}`},
		{"invalid UTF-8", 400, "{\"error\":{\"message\":\"bad \xff\xfe\"}}"},
		{"C1 controls and line separators", 400, `{"error":{"message":"a\u009bb\u2028c\u0085d"}}`},
		{"a message of a megabyte", 400, `{"error":{"message":"` + huge + `","code":"` + huge + `"}}`},
		{"a 200 envelope with escapes", 200, `{"error":{"message":"busy\u001b[2J"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, reply{status: tt.status, body: tt.body})
			_, _, err := newTestClient(t, s.URL(), attempts(1)).Do(t.Context(), testRequest())
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Do() = %v, want an *APIError", err)
			}
			for _, f := range []struct{ name, v string }{{"Code", ae.Code}, {"Message", ae.Message}} {
				if strings.ContainsFunc(f.v, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 }) {
					t.Errorf("%s = %q holds control characters", f.name, f.v)
				}
				if !utf8Valid(f.v) {
					t.Errorf("%s = %q is not valid UTF-8", f.name, f.v)
				}
				if len(f.v) > maxMessage+len("response has no choices: ")+len("…") {
					t.Errorf("%s is %d bytes long, want at most about %d", f.name, len(f.v), maxMessage)
				}
			}
		})
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

// TestRedactHidesCredentials checks every shape of credential a base URL
// may carry.
func TestRedactHidesCredentials(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:hunter2@api.example.com/v1", "https://xxxxx@api.example.com/v1"},
		{"https://hunter2@api.example.com/v1", "https://xxxxx@api.example.com/v1"},
		{"https://api.example.com/v1?api-key=hunter2&api-version=2024-06-01", "https://api.example.com/v1?api-key=xxxxx&api-version=2024-06-01"},
		{"https://x.blob/v1?sig=hunter2&se=2030", "https://x.blob/v1?se=2030&sig=xxxxx"},
		{"https://x/v1?access_token=hunter2", "https://x/v1?access_token=xxxxx"},
		{"https://x/v1?Key=hunter2", "https://x/v1?Key=xxxxx"},
		{"https://x/v1?%zz=hunter2", "https://x/v1?xxxxx"},
		{"http://user:hunter2@[::1", "(unparsable URL)"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want || strings.Contains(got, "hunter2") {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestClientHidesURLCredentials checks that the base URL's password and
// credential query values, like the key, never show in an error, even when
// the server echoes them.
func TestClientHidesURLCredentials(t *testing.T) {
	s := scripted(t,
		reply{status: 400, body: `{"error":{"message":"bad auth user:hunter2-pass, api-key hunter2-query, {auth}"}}`},
		reply{status: 502, body: "upstream said: hunter2-pass hunter2-query"})
	base := strings.Replace(s.URL(), "http://", "http://"+secretUser, 1) + "?api-key=hunter2-query&api-version=2024"
	c := newTestClient(t, base, attempts(1))
	for range 2 {
		_, _, err := c.Do(t.Context(), testRequest())
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Do() = %v, want an error without the URL's credentials", err)
		}
		checkNoKey(t, err)
	}
}
