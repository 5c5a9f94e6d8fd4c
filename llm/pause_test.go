package llm

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A fakeHTTP is an [HTTPClient] playing a script without a socket, for
// client tests under synctest's fake clock. It answers like a [script] and
// notes when each request came.
type fakeHTTP struct {
	t       *testing.T
	start   time.Time
	mu      sync.Mutex
	replies []reply
	at      []time.Duration
}

func newFakeHTTP(t *testing.T, replies ...reply) *fakeHTTP {
	f := &fakeHTTP{t: t, start: time.Now(), replies: replies}
	t.Cleanup(func() {
		if len(f.replies) > 0 {
			t.Errorf("fakeHTTP: %d replies left over after %d requests", len(f.replies), len(f.at))
		}
	})
	return f
}

func (f *fakeHTTP) Do(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = append(f.at, time.Since(f.start))
	if len(f.replies) == 0 {
		f.t.Errorf("fakeHTTP: unexpected request #%d", len(f.at))
		return &http.Response{StatusCode: http.StatusTeapot, Body: http.NoBody}, nil
	}
	rp := f.replies[0]
	f.replies = f.replies[1:]
	status, body := rp.answer(r)
	h := http.Header{}
	for k, v := range rp.header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// times returns when the requests came, from the fake's creation.
func (f *fakeHTTP) times() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.at...)
}

func fakeClient(t *testing.T, h HTTPClient, mod func(*Config)) *Client {
	return newTestClient(t, "https://api.example.com/v1", func(c *Config) {
		c.HTTPClient = h
		if mod != nil {
			mod(c)
		}
	})
}

// TestClientRateLimitPausesEveryone checks that a 429 holds back the other
// workers sharing the limiter until its hint has passed, whether or not the
// request that got it is retried.
func TestClientRateLimitPausesEveryone(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		first       []reply
	}{
		{"retried", 3, []reply{{status: 429, header: map[string]string{"Retry-After": "30"}}, {}}},
		{"not retried: out of attempts", 1, []reply{{status: 429, header: map[string]string{"Retry-After": "30"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim := NewLimiter(0, 0)
				fa, fb := newFakeHTTP(t, tt.first...), newFakeHTTP(t, reply{})
				a := fakeClient(t, fa, func(c *Config) { c.Limiter, c.MaxAttempts = lim, tt.maxAttempts })
				b := fakeClient(t, fb, func(c *Config) { c.Limiter = lim })
				var wg sync.WaitGroup
				wg.Go(func() { a.Do(t.Context(), testRequest()) })
				synctest.Wait()
				time.Sleep(time.Second)
				if _, _, err := b.Do(t.Context(), testRequest()); err != nil {
					t.Fatalf("second worker's Do() = %v", err)
				}
				wg.Wait()
				if at := fb.times()[0]; at < 30*time.Second {
					t.Errorf("second worker sent its request at %v, during the 30s pause of a 429 at 0s", at)
				}
				if at := fa.times(); len(at) > 1 && at[1] != 30*time.Second {
					t.Errorf("first worker retried at %v, want 30s", at[1])
				}
			})
		})
	}
}

// TestClientHintNotCutShort checks that a hint longer than the backoff cap
// is waited out in full, and that the backoff is not used on top of it.
func TestClientHintNotCutShort(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		hint    string
		limiter bool
		want    time.Duration
	}{
		{"429 with a limiter", 429, "600", true, 10 * time.Minute},
		{"429 without a limiter", 429, "600", false, 10 * time.Minute},
		{"503", 503, "90", false, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeHTTP(t, reply{status: tt.status, header: map[string]string{"Retry-After": tt.hint}}, reply{})
				c := fakeClient(t, f, func(c *Config) {
					c.Backoff = FullJitter(time.Second, time.Minute)
					if tt.limiter {
						c.Limiter = NewLimiter(0, 0)
					}
				})
				if _, n, err := c.Do(t.Context(), testRequest()); err != nil || n != 2 {
					t.Fatalf("Do() = %d attempts, %v; want 2, nil", n, err)
				}
				if at := f.times()[1]; at != tt.want {
					t.Errorf("retry after Retry-After: %s came at %v, want %v", tt.hint, at, tt.want)
				}
			})
		})
	}
}

// TestClientBackoff checks that, with no hint, retry n waits Backoff(n).
func TestClientBackoff(t *testing.T) {
	for _, status := range []int{429, 500} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var asked []int
				f := newFakeHTTP(t, reply{status: status}, reply{status: status}, reply{})
				c := fakeClient(t, f, func(c *Config) {
					c.Limiter = NewLimiter(0, 0)
					c.Backoff = func(n int) time.Duration { asked = append(asked, n); return time.Duration(n) * 7 * time.Second }
				})
				if _, n, err := c.Do(t.Context(), testRequest()); err != nil || n != 3 {
					t.Fatalf("Do() = %d attempts, %v; want 3, nil", n, err)
				}
				if at := f.times(); at[1] != 7*time.Second || at[2] != 21*time.Second {
					t.Errorf("attempts after %d came at %v, want [0s 7s 21s]", status, at)
				}
				if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
					t.Errorf("Backoff was asked for retries %v, want [1 2]", asked)
				}
			})
		})
	}
}
