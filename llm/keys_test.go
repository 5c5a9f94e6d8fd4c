package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// keyServer answers by key: "busy" gets 429 with a long Retry-After, "bad"
// gets 401, any other key an answer.
type keyServer struct {
	mu   sync.Mutex
	seen map[string]int
}

func (k *keyServer) Do(r *http.Request) (*http.Response, error) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	k.mu.Lock()
	k.seen[key]++
	k.mu.Unlock()
	status, body, h := 200, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`, http.Header{}
	switch {
	case strings.HasPrefix(key, "busy"):
		status, body = 429, `{"error":{"message":"rate limit","code":"rate_limit_exceeded"}}`
		h.Set("Retry-After", "3600")
	case strings.HasPrefix(key, "bad"):
		status, body = 401, `{"error":{"message":"invalid key"}}`
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
}

func TestKeyRotation(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		wantErr Kind // 0: every request succeeds
	}{
		{"a busy key rests, the others go on at once", []string{"busy-key-1234", "good-key-1234"}, 0},
		{"a refused key is dropped", []string{"bad-key-12345", "good-key-1234", "busy-key-1234"}, 0},
		{"all refused: the run stops", []string{"bad-key-12345", "bad-key-67890"}, Auth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &keyServer{seen: map[string]int{}}
				lim := NewLimiterConfig(LimiterConfig{Adapt: true})
				c, err := New(Config{BaseURL: "https://x/v1", APIKeys: tt.keys, HTTPClient: srv, Limiter: lim,
					Backoff: func(int) time.Duration { return 0 }})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				for i := range 20 {
					_, _, err := c.Do(context.Background(), &Request{Body: []byte(fmt.Sprintf(`{"n":%d}`, i))})
					var ae *APIError
					switch {
					case tt.wantErr == 0 && err != nil:
						t.Fatalf("request %d: %v", i, err)
					case tt.wantErr != 0 && (!errors.As(err, &ae) || ae.Kind != tt.wantErr):
						t.Fatalf("request %d: error %v, want kind %v", i, err, tt.wantErr)
					}
					if err != nil && strings.Contains(err.Error(), "key-") {
						t.Errorf("error %q shows a key", err)
					}
				}
				if took := time.Since(start); took > time.Minute {
					t.Errorf("20 requests took %v: a key's 429 held the others back", took)
				}
				srv.mu.Lock()
				defer srv.mu.Unlock()
				for k, n := range srv.seen {
					if (strings.HasPrefix(k, "busy") || strings.HasPrefix(k, "bad")) && n > 1 {
						t.Errorf("key %s was tried %d times after it failed", k, n)
					}
				}
			})
		})
	}
}

// TestRetryLogSaysWhereTheDelayCameFrom: each retry is one debug line with
// the request, attempt, status, delay and its source.
func TestRetryLogSaysWhereTheDelayCameFrom(t *testing.T) {
	tests := []struct {
		first reply
		want  string
	}{
		{reply{status: 429, header: map[string]string{"retry-after-ms": "5"}}, `"source":"header"`},
		{reply{status: 429, body: `{"error":{"message":"slow down"},"data":{"retry_after_seconds":0.005}}`}, `"source":"body"`},
		{reply{status: 503}, `"source":"backoff"`},
	}
	for _, tt := range tests {
		var buf strings.Builder
		var mu sync.Mutex
		log := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := scripted(t, tt.first, reply{})
		c := newTestClient(t, s.URL(), func(c *Config) { c.Logger = log })
		if _, _, err := c.Do(t.Context(), &Request{Body: []byte(`{}`), Label: "item-7"}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		line := buf.String()
		mu.Unlock()
		for _, w := range []string{`"msg":"retry"`, `"request":"item-7"`, `"attempt":1`, tt.want} {
			if !strings.Contains(line, w) {
				t.Errorf("retry log %s lacks %s", line, w)
			}
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
