package mock

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

func TestStartClose(t *testing.T) {
	s, err := Start(Config{Model: "loop-1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/v1") {
		t.Errorf("URL = %q, want http://127.0.0.1:PORT/v1", s.URL)
	}
	resp := decodeChat(t, do(t, "POST", s.URL+"/chat/completions", chatBody(t, "ping", nil), "Authorization", "Bearer k"))
	if got := llm.TextContent(resp.Choices[0].Message.Content); got != "echo: ping" || resp.Model != "loop-1" {
		t.Errorf("answer = %q from %q, want \"echo: ping\" from loop-1", got, resp.Model)
	}
	if n := s.Handler.Stats().OK; n != 1 {
		t.Errorf("Handler.Stats().OK = %d, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	c := &http.Client{Timeout: time.Second}
	if resp, err := c.Post(s.URL+"/chat/completions", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Errorf("POST after Close succeeded with %d", resp.StatusCode)
	}
}

// TestCloseCutsSlowRequests checks that Close returns, within its bound,
// even while a request waits out a long latency.
func TestCloseCutsSlowRequests(t *testing.T) {
	s, err := Start(Config{Latency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for s.Handler.Stats().Requests == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if d := time.Since(start); d > 5*closeBound {
		t.Errorf("Close() took %v", d)
	}
	if err := <-errc; err == nil {
		t.Errorf("slow request succeeded after Close")
	}
}
