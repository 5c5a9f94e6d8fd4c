package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is the API key of every test client; no error may show it.
const testKey = "sk-test-0123456789abcdef"

const okBody = `{"id":"c-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`

// A reply is one scripted answer of a [script] server.
type reply struct {
	status  int               // 0 means 200
	header  map[string]string // response headers
	body    string            // "" means okBody for a 2xx; "{auth}" is replaced by the request's Authorization
	hang    bool              // answer nothing until the client gives up
	trickle time.Duration     // send the body a byte at a time, this far apart
	before  func()            // called when the request arrives, before answering
}

// A seen request is what the server received.
type seen struct {
	at     time.Time
	method string
	path   string
	header http.Header
	body   []byte
}

// A script is an httptest server that answers each request with the next
// reply, each used once and in order. The test fails if a request comes
// when none is left, or if any is left over at the end.
type script struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	seen    []seen
}

// scripted starts a plain HTTP script server, closed when the test ends.
func scripted(t *testing.T, replies ...reply) *script {
	t.Helper()
	s := &script{t: t, replies: replies}
	t.Cleanup(s.verify) // runs after the server has closed
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL a client should be given.
func (s *script) URL() string { return s.srv.URL + "/v1" }

func (s *script) verify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) > 0 {
		s.t.Errorf("script: %d replies left over after %d requests", len(s.replies), len(s.seen))
	}
}

// requests returns what the server has received so far.
func (s *script) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

func (s *script) next(r *http.Request) (reply, bool) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, seen{at: time.Now(), method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
	if len(s.replies) == 0 {
		return reply{}, false
	}
	rp := s.replies[0]
	s.replies = s.replies[1:]
	return rp, true
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.next(r)
	if !ok {
		s.t.Errorf("script: unexpected request #%d: %s %s", len(s.requests()), r.Method, r.URL.Path)
		http.Error(w, "unexpected request", http.StatusTeapot) // not retried
		return
	}
	if rp.before != nil {
		rp.before()
	}
	if rp.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	status, body := rp.answer(r)
	w.WriteHeader(status)
	if rp.trickle <= 0 {
		io.WriteString(w, body)
		return
	}
	trickle(r.Context(), w, body, rp.trickle)
}

func (rp reply) answer(r *http.Request) (int, string) {
	status, body := rp.status, rp.body
	if status == 0 {
		status = http.StatusOK
	}
	if body == "" && status/100 == 2 {
		body = okBody
	}
	return status, strings.ReplaceAll(body, "{auth}", r.Header.Get("Authorization"))
}

func trickle(ctx context.Context, w http.ResponseWriter, body string, every time.Duration) {
	for i := range len(body) {
		io.WriteString(w, body[i:i+1])
		w.(http.Flusher).Flush()
		select {
		case <-time.After(every):
		case <-ctx.Done():
			return
		}
	}
}
