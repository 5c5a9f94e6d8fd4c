package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

func TestSecretHideClipped(t *testing.T) {
	s := secret{value: "sk-proj-ABCDEFGHIJKLMNOP", mask: "[key]"}
	for in, want := range map[string]string{
		"bad key sk-proj-ABCDEFGHIJKLMNOP here":   "bad key [key] here",
		"clipped at the end: Bearer sk-proj-ABCD": "clipped at the end: Bearer [key]",
		"nothing secret":                          "nothing secret",
	} {
		if got := s.hide(in); got != want {
			t.Errorf("hide(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKeysRestWithoutBurst: while every key rests, waiting requests hold no
// permit, so when a key is back they leave at the pace of --rpm, not at
// once; and a 429 on the last attempt rests the key without pausing the
// model for the other keys.
func TestKeysRestWithoutBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		perSecond := map[int]int{}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			perSecond[int(time.Since(start)/time.Second)]++
			mu.Unlock()
			if time.Since(start) < 2*time.Second {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(429)
				fmt.Fprint(w, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`)
				return
			}
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		})
		lim := NewLimiterConfig(LimiterConfig{RPM: 120})
		c, err := New(Config{BaseURL: "https://x/v1", APIKeys: []string{"key-one-123", "key-two-456"},
			HTTPClient: handlerDoer{h}, Limiter: lim, MaxAttempts: 50, Backoff: func(int) time.Duration { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				if _, _, err := c.Do(context.Background(), &Request{Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for sec, n := range perSecond {
			if sec >= 2 && n > 3 { // 2 a second at 120 rpm, one more at a window's edge
				t.Errorf("second %d saw %d requests: a burst after the keys rested (at 120 rpm)", sec, n)
			}
		}
	})
}

// handlerDoer serves requests with a handler in memory.
type handlerDoer struct{ h http.Handler }

func (d handlerDoer) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func TestLastAttempt429RestsOnlyTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &keyServer{seen: map[string]int{}}
		lim := NewLimiterConfig(LimiterConfig{})
		c, _ := New(Config{BaseURL: "https://x/v1", APIKeys: []string{"busy-key-1234", "good-key-1234"}, HTTPClient: srv,
			Limiter: lim, MaxAttempts: 1, Backoff: func(int) time.Duration { return 0 }})
		start := time.Now()
		for i := range 4 {
			c.Do(context.Background(), &Request{Body: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("4 requests took %v: a 429 on one key's last attempt held the other key back", took)
		}
	})
}
