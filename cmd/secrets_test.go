package cmd_test

// Secrets (issue 6, point 5), extending TestKeyNeverLeaks: the key and the
// password of a base URL must show nowhere but in the request's header:
// not in any file (results, errors, checkpoint, --report, --metrics-file),
// not on stdout or stderr at any log level, not in --help; a key about to
// travel over plain http to another host is warned about; files that can
// hold prompts are private.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

const (
	leakKey      = "sk-test-KEYSECRET-0123456789"
	leakPassword = "PWSECRET-hunter2"
)

// withPassword puts user info holding leakPassword into a base URL.
func withPassword(base string) string {
	return strings.Replace(base, "http://", "http://user:"+leakPassword+"@", 1)
}

// checkNoSecrets fails the test if any named stream or file of dir holds
// the key or the password, or a telling part of either.
func checkNoSecrets(t *testing.T, dir string, streams map[string][]byte) {
	t.Helper()
	places := map[string][]byte{}
	for k, v := range streams {
		places[k] = v
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			places[e.Name()] = b
		}
	}
	for name, b := range places {
		for _, s := range []string{leakKey, "KEYSECRET", leakPassword, "PWSECRET", "hunter2"} {
			if i := bytes.Index(b, []byte(s)); i >= 0 {
				t.Errorf("%s holds %q: …%s…", name, s, b[max(i-80, 0):min(i+40, len(b))])
			}
		}
	}
}

// TestSecretsNeverLeak runs verbose jobs through every kind of failure with
// a key, a base URL holding a password, --report and --metrics-file.
func TestSecretsNeverLeak(t *testing.T) {
	binary(t)
	script := func(prompt string, n int) *reply {
		var i int
		fmt.Sscanf(prompt, "item %d:", &i)
		switch {
		case i%7 == 0: // a server that quotes the request's headers back
			return errorReply(400, "invalid_value", "Invalid header: Authorization: Bearer "+leakKey)
		case i%7 == 1 && n == 1:
			r := errorReply(429, "rate_limit_exceeded", "Rate limit reached for requests.")
			r.header = map[string]string{"retry-after-ms": "5"}
			return r
		case i%7 == 2 && n == 1:
			return errorReply(500, "server_error", "The server had an error while processing your request.")
		case i%7 == 3 && n == 1:
			return &reply{status: 502, body: "<html><body>Bad gateway for Bearer " + leakKey + "</body></html>"}
		}
		return nil
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			srv := newServer(t, mock.Config{}, script)
			// In front of it, a server that cuts some first attempts off
			// (a reset) or lets them hang past the timeout: transport
			// errors, whose text net/http builds with the URL.
			var mu sync.Mutex
			seen, auth := map[string]int{}, map[string]int{}
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				prompt := lastUserText(body)
				mu.Lock()
				seen[prompt]++
				n := seen[prompt]
				auth[r.Header.Get("Authorization")]++
				mu.Unlock()
				var i int
				fmt.Sscanf(prompt, "item %d:", &i)
				switch {
				case i%7 == 4 && n == 1:
					if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
						if tc, ok := c.(*net.TCPConn); ok {
							tc.SetLinger(0)
						}
						c.Close()
					}
				case i%7 == 5 && n == 1:
					<-r.Context().Done()
				default:
					srv.ServeHTTP(w, r)
				}
			}))
			t.Cleanup(front.Close)
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
			writeInput(t, in, 35)
			args := runArgs(withPassword(front.URL+"/v1"), out, in, "-j", "4", "--max-attempts", "3", "--base-delay", "1ms",
				"--max-delay", "10ms", "--timeout", "500ms", "-v", "--log-format", format,
				"--report", filepath.Join(dir, "report.json"), "--metrics-file", filepath.Join(dir, "metrics.prom"))
			p := start(t, dir, childEnv("LLMBATCH_API_KEY="+leakKey), nil, args...)
			if code := p.wait(t, 30*time.Second); code != 1 {
				t.Errorf("exit code %d, want 1 (some items failed with 400)\nstderr:\n%s", code, p.stderr.String())
			}
			mu.Lock()
			for h, n := range auth {
				if h != "Bearer "+leakKey {
					t.Errorf("%d requests had Authorization %q, want the key as a bearer token", n, h)
				}
			}
			mu.Unlock()
			stderr := p.stderr.String()
			for _, want := range []string{"DEBUG", "retry"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not hold %q: the test proves less than it should\n%s", want, stderr)
				}
			}
			for _, f := range []string{"out.jsonl", "out.errors.jsonl", "out.jsonl.ckpt", "report.json", "metrics.prom"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("%s was not written: %v", f, err)
				}
			}
			checkNoSecrets(t, dir, map[string][]byte{"stdout": p.stdout.Bytes(), "stderr": p.stderr.Bytes()})
		})
	}

	t.Run("stopped by a 401 that quotes the key", func(t *testing.T) {
		srv := newServer(t, mock.Config{}, func(string, int) *reply {
			return errorReply(401, "invalid_api_key", "Incorrect API key provided: "+leakKey+".")
		})
		dir := t.TempDir()
		in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
		writeInput(t, in, 10)
		p := start(t, dir, childEnv("LLMBATCH_API_KEY="+leakKey), nil, runArgs(withPassword(srv.base()), out, in, "-v",
			"--report", filepath.Join(dir, "report.json"), "--metrics-file", filepath.Join(dir, "metrics.prom"))...)
		if code := p.wait(t, 30*time.Second); code != 3 {
			t.Errorf("exit code %d, want 3\nstderr:\n%s", code, p.stderr.String())
		}
		if !strings.Contains(p.stderr.String(), "401") {
			t.Errorf("stderr does not name the 401:\n%s", p.stderr.String())
		}
		checkNoSecrets(t, dir, map[string][]byte{"stdout": p.stdout.Bytes(), "stderr": p.stderr.Bytes()})
	})

	t.Run("unreachable base URL with a password", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // connections are refused
		dir := t.TempDir()
		in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
		writeInput(t, in, 3)
		base := "http://user:" + leakPassword + "@" + addr + "/v1?api-key=" + leakPassword
		p := start(t, dir, childEnv("LLMBATCH_API_KEY="+leakKey), nil, runArgs(base, out, in, "-v",
			"--max-attempts", "2", "--base-delay", "1ms", "--break-after", "0", "--report", filepath.Join(dir, "report.json"))...)
		if code := p.wait(t, 30*time.Second); code != 1 && code != 3 {
			t.Errorf("exit code %d, want 1 or 3\nstderr:\n%s", code, p.stderr.String())
		}
		if !strings.Contains(p.stderr.String()+string(readFile(t, filepath.Join(dir, "out.errors.jsonl"))), "refused") {
			t.Errorf("neither stderr nor the errors file says the connection was refused:\n%s", p.stderr.String())
		}
		checkNoSecrets(t, dir, map[string][]byte{"stdout": p.stdout.Bytes(), "stderr": p.stderr.Bytes()})
	})

	t.Run("help", func(t *testing.T) {
		for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"mock", "serve", "--help"}, {"status", "--help"}} {
			cmd := exec.Command(binary(t), args...)
			cmd.Env = childEnv("LLMBATCH_API_KEY="+leakKey, "OPENAI_API_KEY="+leakKey, "DEEPSEEK_API_KEY="+leakKey,
				"LLMBATCH_BASE_URL=http://user:"+leakPassword+"@example.com/v1")
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("llmbatch %s: %v\n%s", strings.Join(args, " "), err, b)
			}
			checkNoSecrets(t, t.TempDir(), map[string][]byte{"llmbatch " + strings.Join(args, " "): b})
		}
	})
}

// TestPlainHTTPWarning checks the warning given when the key is about to go
// over plain http to a host other than this machine, and that it shows
// the base URL without its password.
func TestPlainHTTPWarning(t *testing.T) {
	binary(t)
	tests := []struct {
		name string
		base string
		key  bool
		warn bool
	}{
		{"remote http with a key", "http://user:" + leakPassword + "@192.0.2.1:9/v1", true, true},
		{"remote http by name", "http://gpu-box.invalid:8000/v1", true, true},
		{"remote http, a key in the query", "http://192.0.2.1:9/v1?api-key=" + leakPassword + "&api-version=1", true, true},
		{"remote http without a key", "http://192.0.2.1:9/v1", false, false},
		{"remote https", "https://192.0.2.1:9/v1", true, false},
		{"loopback http", "http://127.0.0.1:9/v1", true, false},
		{"localhost http", "http://localhost:9/v1", true, false},
		{"IPv6 loopback http", "http://[::1]:9/v1", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeInput(t, filepath.Join(dir, "in.jsonl"), 1)
			env := childEnv()
			if tt.key {
				env = childEnv("LLMBATCH_API_KEY=" + leakKey)
			}
			// One short attempt: nothing answers at these addresses.
			p := start(t, dir, env, nil, runArgs(tt.base, "out.jsonl", "in.jsonl", "--max-attempts", "1", "--timeout", "300ms")...)
			p.wait(t, 30*time.Second)
			stderr := p.stderr.String()
			if got := strings.Contains(stderr, "plain http"); got != tt.warn {
				t.Errorf("warning about plain http given: %v, want %v\nstderr:\n%s", got, tt.warn, stderr)
			}
			checkNoSecrets(t, dir, map[string][]byte{"stderr": p.stderr.Bytes(), "stdout": p.stdout.Bytes()})
		})
	}
}

// TestKeyPastedAsVariableName checks that a key given to --api-key-env by
// mistake, instead of a variable's name, is refused without being echoed.
func TestKeyPastedAsVariableName(t *testing.T) {
	binary(t)
	dir := t.TempDir()
	writeInput(t, filepath.Join(dir, "in.jsonl"), 1)
	p := start(t, dir, childEnv(), nil, runArgs("http://127.0.0.1:9/v1", "out.jsonl", "in.jsonl", "--api-key-env", leakKey)...)
	if code := p.wait(t, 30*time.Second); code != 2 {
		t.Errorf("exit code %d, want 2 (usage)\nstderr:\n%s", code, p.stderr.String())
	}
	checkNoSecrets(t, dir, map[string][]byte{"stderr": p.stderr.Bytes(), "stdout": p.stdout.Bytes()})
}
