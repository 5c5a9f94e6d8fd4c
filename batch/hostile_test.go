package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// hostileKey is the API key of the hostile-server runs: no file may hold it.
const hostileKey = "sk-hostile-0123456789abcdef"

// hostileRun is one end-to-end Run against base with a short attempt
// timeout and two attempts per item. It returns the run's outcome and the
// directory holding the output files.
func hostileRun(t *testing.T, base string, n int, timeout time.Duration) (*Summary, error, string) {
	t.Helper()
	if timeout <= 0 {
		timeout = 300 * time.Millisecond
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"h%d","prompt":"item %d"}`+"\n", i, i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lim := llm.NewLimiter(0, 0)
	c, err := llm.New(llm.Config{BaseURL: base + "/v1", APIKey: hostileKey, Limiter: lim, MaxAttempts: 2,
		Backoff: func(int) time.Duration { return 0 }, Timeout: timeout, MaxBodyBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	sum, err := Run(t.Context(), Config{Input: f, InputPath: in, Output: filepath.Join(dir, "out.jsonl"),
		Client: c, Model: "m", Concurrency: 3})
	return sum, err, dir
}

// leakCheck fails the test if goroutines started during it are still
// running when it ends, after every cleanup registered later (servers).
func leakCheck(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

func handlerServer(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// hangingListener accepts connections and never answers; they are closed
// when the test ends.
func hangingListener(t *testing.T, accept bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	if accept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// TestRunHostileServers runs a whole job against servers that misbehave.
// None may hang the run, crash it, leak a goroutine or the key, or record
// an item as done without its answer.
func TestRunHostileServers(t *testing.T) {
	const n = 6
	html := "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
	tests := []struct {
		name       string
		base       func(t *testing.T) string
		wantDone   int
		wantDown   bool     // every attempt fails transiently: a *StopError of ErrServerDown, nothing recorded
		wantStop   llm.Kind // the Kind of the *StopError, 0 when the run ends normally
		wantNoAuth bool     // the final server must get no Authorization header
		// timeout of one attempt; default 300ms. Cases that must succeed or
		// fail for another reason than time get more, so that a loaded
		// machine (the whole suite on two cores) does not turn them into
		// timeouts.
		timeout time.Duration
	}{
		{name: "200 with invalid JSON", wantDown: true, base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"choices":[{"mess`) })
		}},
		{name: "200 with empty choices", wantDown: true, base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"choices":[]}`) })
		}},
		{name: "200 with an HTML page", wantDown: true, base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, html) })
		}},
		{name: "502 with an HTML page", wantDown: true, base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				io.WriteString(w, html)
			})
		}},
		{name: "a body over the cap", wantDown: true, base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"`)
				w.Write(bytes.Repeat([]byte("x"), 1<<20))
				io.WriteString(w, `"}}]}`)
			})
		}},
		{name: "bytes trickled past the timeout", wantDown: true, base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				for range 1000 {
					if _, err := io.WriteString(w, " "); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-time.After(10 * time.Millisecond):
					case <-r.Context().Done():
						return
					}
				}
			})
		}},
		{name: "bytes trickled below the timeout", wantDone: n, timeout: 5 * time.Second, base: func(t *testing.T) string {
			h := mock.New(mock.Config{})
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				w.WriteHeader(rec.Code)
				for _, c := range rec.Body.Bytes() {
					w.Write([]byte{c})
					w.(http.Flusher).Flush()
					time.Sleep(100 * time.Microsecond)
				}
			})
		}},
		{name: "a connection that never answers", wantDown: true, base: func(t *testing.T) string {
			return hangingListener(t, true)
		}},
		{name: "a listener that never accepts", wantDown: true, base: func(t *testing.T) string {
			return hangingListener(t, false)
		}},
		{name: "a redirect to another host", wantDone: n, wantNoAuth: true, base: func(t *testing.T) string {
			h := mock.New(mock.Config{})
			other := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				if a := r.Header.Get("Authorization"); a != "" {
					t.Errorf("the other host got Authorization %q", a)
				}
				h.ServeHTTP(w, r)
			})
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
			})
		}},
		{name: "an untrusted certificate", wantStop: llm.Certificate, timeout: 5 * time.Second, base: func(t *testing.T) string {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				t.Errorf("a request reached a server whose certificate is not trusted")
			}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return srv.URL
		}},
		{name: "plain HTTP behind https", wantStop: llm.Certificate, timeout: 5 * time.Second, base: func(t *testing.T) string {
			return "https://" + strings.TrimPrefix(handlerServer(t, func(w http.ResponseWriter, r *http.Request) {}), "http://")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			base := tt.base(t)
			began := time.Now()
			sum, err, dir := hostileRun(t, base, n, tt.timeout)
			took := time.Since(began)
			if took > 10*time.Second {
				t.Errorf("Run() took %v, want it bounded by the attempts' timeouts", took)
			}
			var se *StopError
			var ae *llm.APIError
			switch {
			case tt.wantStop != 0:
				if !errors.As(err, &se) || !errors.As(err, &ae) || ae.Kind != tt.wantStop {
					t.Fatalf("Run() = %v, want a *StopError for %v", err, tt.wantStop)
				}
			case err != nil && !tt.wantDown:
				t.Fatalf("Run() = %v, want nil", err)
			}
			if tt.wantDown && (!errors.As(err, &se) || !errors.Is(err, ErrServerDown)) {
				t.Fatalf("Run() = %v, want a *StopError of ErrServerDown: no item is at fault", err)
			}
			const wantFailed = 0 // a hostile server is never the items' fault
			if int(sum.Done) != tt.wantDone || int(sum.Failed) != wantFailed {
				t.Errorf("summary: %d done, %d failed; want %d and %d", sum.Done, sum.Failed, tt.wantDone, wantFailed)
			}
			out := filepath.Join(dir, "out.jsonl")
			results, errs := lines(t, out), lines(t, ErrorsPath(out))
			if len(results) != tt.wantDone || len(errs) != wantFailed {
				t.Errorf("%d result lines and %d error lines, want %d and %d", len(results), len(errs), tt.wantDone, wantFailed)
			}
			snap, lerr := checkpoint.Load(out + ".ckpt")
			if lerr != nil {
				t.Fatal(lerr)
			}
			if d, f, _ := snap.Counts(); d != tt.wantDone || f != wantFailed {
				t.Errorf("checkpoint: %d done, %d failed; want %d and %d", d, f, tt.wantDone, wantFailed)
			}
			checkNoSecret(t, dir, hostileKey)
			if err != nil && strings.Contains(err.Error(), hostileKey) {
				t.Errorf("Run() = %q shows the key", err)
			}
			t.Logf("%v: %d done, %d failed, err %v", took.Round(time.Millisecond), sum.Done, sum.Failed, err)
		})
	}
}

// checkNoSecret fails the test if any file in dir holds secret.
func checkNoSecret(t *testing.T, dir, secret string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the key", e.Name())
		}
	}
}
