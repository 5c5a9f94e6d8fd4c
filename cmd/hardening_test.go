package cmd_test

// Hardening (issue 6): hostile input files and paths, hostile servers seen
// from the command line, and secrets. Each runs the real binary.

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// errLine is a line of the errors file.
type errLine struct {
	ID    *string `json:"id"`
	Line  int     `json:"line"`
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func readErrors(t *testing.T, path string) []errLine {
	t.Helper()
	var out []errLine
	for _, l := range lines(t, path) {
		var e errLine
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%s: not an errors line: %q", filepath.Base(path), l)
		}
		out = append(out, e)
	}
	return out
}

// TestHostileInput runs one input file holding every kind of hostile line
// of issue 6. The errors file must hold exactly the bad lines, each once,
// with its number, kind invalid_input and a message saying what is wrong;
// the results must hold exactly the good ids with the right answers. A
// rerun sends nothing and changes nothing.
func TestHostileInput(t *testing.T) {
	binary(t)
	srv := newServer(t, mock.Config{}, nil)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	type line struct {
		text string
		id   string // a good line: its id
		want string // a bad line: a word its message must hold
	}
	input := []line{
		{text: "\xef\xbb\xbf" + `{"id":"bom","prompt":"a byte order mark first"}`, id: "bom"},
		{text: `{"id":"crlf","prompt":"a CRLF line end"}` + "\r", id: "crlf"},
		{text: ""},
		{text: " \t \r"},
		{text: `this is not JSON`, want: "not a JSON object"},
		{text: `["an","array"]`, want: "not a JSON object"},
		{text: `null`, want: "not a JSON object"},
		{text: "{\"id\":\"utf8\",\"prompt\":\"caf\xe9 \xff\"}", want: "UTF-8"},
		{text: "{\"id\":\"nul\",\"prompt\":\"a\x00b\"}", want: "not a JSON object"},
		{text: "\x00\x00\x00\x00", want: "not a JSON object"},
		{text: `{"id":"deep","prompt":"too deep","x":` + nested(20000) + `}`, want: "depth"},
		{text: `{"id":"nested","prompt":"nested, but not too deep","x":` + nested(500) + `}`, id: "nested"},
		{text: `{"id":"dup","prompt":"the first dup"}`, id: "dup"},
		{text: `{"id":"dup","prompt":"the second dup"}`, want: "duplicate id"},
		{text: `{"id":"7","prompt":"seven as a string"}`, id: "7"},
		{text: `{"id":7,"prompt":"seven as a number"}`, want: "duplicate id"},
		{text: `{"id":{"a":1},"prompt":"an object id"}`, want: "id must be"},
		{text: `{"id":null,"prompt":"a null id"}`, want: "id must be"},
		{text: `{"id":1.5,"prompt":"a float id"}`, want: "id must be"},
		{text: `{"id":"","prompt":"an empty id"}`, want: "id must be"},
		{text: `{"id":"noprompt"}`, want: "no prompt"},
		{text: `{"id":"esc","prompt":"escapes \u0000 \u001b[2J \ud83d\ude00 <b>&amp;</b>"}`, id: "esc"},
		{text: `{"id":"cut","prompt":"the last line is cut sh`, want: "cut short"},
	}
	var b strings.Builder
	for i, l := range input {
		b.WriteString(l.text)
		if i < len(input)-1 {
			b.WriteByte('\n') // the last line has no newline
		}
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := runArgs(srv.base(), out, in, "-j", "4")
	p := start(t, dir, childEnv(), nil, args...)
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1 (bad lines)\nstderr:\n%s", code, p.stderr.String())
	}

	var wantIDs []string
	wantBad := map[int]string{}
	for i, l := range input {
		switch {
		case l.id != "":
			wantIDs = append(wantIDs, l.id)
		case l.want != "":
			wantBad[i+1] = l.want
		}
	}
	outputs, ids, torn := readResults(t, out)
	slices.Sort(ids)
	slices.Sort(wantIDs)
	if torn != "" || !slices.Equal(ids, wantIDs) {
		t.Errorf("results hold ids %q (torn %q), want %q", ids, torn, wantIDs)
	}
	for _, id := range wantIDs {
		if want := mock.Answer(prompt(t, input[slices.IndexFunc(input, func(l line) bool { return l.id == id })].text)); outputs[id] != want {
			t.Errorf("output of %s = %q, want %q", id, outputs[id], want)
		}
	}
	seen := map[int]bool{}
	for _, e := range readErrors(t, filepath.Join(dir, "out.errors.jsonl")) {
		want, ok := wantBad[e.Line]
		switch {
		case !ok:
			t.Errorf("errors file has line %d (%s: %s), which is good or blank", e.Line, e.Error.Kind, e.Error.Message)
		case seen[e.Line]:
			t.Errorf("errors file has line %d twice", e.Line)
		case e.Error.Kind != "invalid_input" || !strings.Contains(e.Error.Message, want):
			t.Errorf("errors file, line %d: %s: %q; want invalid_input saying %q", e.Line, e.Error.Kind, e.Error.Message, want)
		}
		seen[e.Line] = true
	}
	for n, want := range wantBad {
		if !seen[n] {
			t.Errorf("errors file lacks line %d (want a message saying %q)", n, want)
		}
	}
	if n := srv.total.Load(); n != int64(len(wantIDs)) {
		t.Errorf("the server got %d requests for %d good lines", n, len(wantIDs))
	}

	// A rerun finds everything recorded.
	res, errs := readFile(t, out), readFile(t, filepath.Join(dir, "out.errors.jsonl"))
	total := srv.total.Load()
	p = start(t, dir, childEnv(), nil, args...)
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("rerun: exit code %d, want 1\nstderr:\n%s", code, p.stderr.String())
	}
	if n := srv.total.Load() - total; n != 0 {
		t.Errorf("rerun sent %d requests, want 0", n)
	}
	if !bytes.Equal(res, readFile(t, out)) || !bytes.Equal(errs, readFile(t, filepath.Join(dir, "out.errors.jsonl"))) {
		t.Errorf("rerun changed the results or the errors file")
	}
}

// prompt returns the prompt of a good input line.
func prompt(t *testing.T, line string) string {
	t.Helper()
	var r struct{ Prompt string }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "\xef\xbb\xbf")), &r); err != nil {
		t.Fatal(err)
	}
	return r.Prompt
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// TestBadPaths gives llmbatch inputs it cannot read and outputs it must not
// write: each must exit 2 before any request, say what is wrong, and leave
// the files it was given as they were.
func TestBadPaths(t *testing.T) {
	binary(t)
	good := `{"id":"a","prompt":"x"}` + "\n"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // may write files and make changes
		args  []string                       // after run's flags; the last is the input
		say   string                         // stderr holds this
		root  bool                           // skipped as root, who can read anything
	}{
		{name: "unreadable input", root: true, args: []string{"-o", "out.jsonl", "in.jsonl"}, say: "permission denied",
			setup: func(t *testing.T, dir string) { chmod(t, filepath.Join(dir, "in.jsonl"), 0) }},
		{name: "output is the input", args: []string{"-o", "in.jsonl", "in.jsonl"}, say: "input"},
		{name: "output is a link to the input", args: []string{"-o", "link.jsonl", "in.jsonl"}, say: "input",
			setup: func(t *testing.T, dir string) { symlink(t, "in.jsonl", filepath.Join(dir, "link.jsonl")) }},
		{name: "errors file is the input", args: []string{"-o", "job.jsonl", "job.errors.jsonl"}, say: "input",
			setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "job.errors.jsonl"), good) }},
		{name: "checkpoint is the input", args: []string{"-o", "out.jsonl", "--checkpoint", "in.jsonl", "in.jsonl"}, say: "input"},
		{name: "output in a missing directory", args: []string{"-o", "nope/out.jsonl", "in.jsonl"}, say: "nope"},
		{name: "output is a directory", args: []string{"-o", "sub", "in.jsonl"}, say: "sub",
			setup: func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) }},
		{name: "output is some other text file", args: []string{"-o", "notes.txt", "in.jsonl"}, say: "notes.txt",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "notes.txt"), "my notes\nthe last line, without a newline")
			}},
		{name: "output is some other JSON file", args: []string{"-o", "data.json", "in.jsonl"}, say: "data.json",
			setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "data.json"), "{\n  \"a\": 1\n}\n") }},
		{name: "input is a directory", args: []string{"-o", "out.jsonl", "sub"}, say: "sub",
			setup: func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() == 0 {
				t.Skip("root can read any file")
			}
			srv := newServer(t, mock.Config{}, nil)
			dir := t.TempDir()
			write(t, filepath.Join(dir, "in.jsonl"), good)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			before := snapshot(t, dir)
			args := append([]string{"run", "--base-url", srv.base(), "--model", "m", "--progress", "off"}, tt.args...)
			p := start(t, dir, childEnv(), nil, args...)
			code := p.wait(t, 20*time.Second)
			stderr := p.stderr.String()
			if code != 2 {
				t.Errorf("exit code %d, want 2\nstderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.say) {
				t.Errorf("stderr does not say %q:\n%s", tt.say, stderr)
			}
			if n := srv.total.Load(); n != 0 {
				t.Errorf("the server got %d requests, want none", n)
			}
			after := snapshot(t, dir)
			for name, b := range before {
				if !bytes.Equal(after[name], b) {
					t.Errorf("%s changed: %.60q → %.60q", name, b, after[name])
				}
			}
			t.Logf("stderr: %s", strings.TrimSpace(stderr))
		})
	}
}

// TestEmptyInput runs an empty file: nothing to do is success, said so.
func TestEmptyInput(t *testing.T) {
	binary(t)
	srv := newServer(t, mock.Config{}, nil)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "empty.jsonl"), "")
	p := start(t, dir, childEnv(), nil, runArgs(srv.base(), "out.jsonl", "empty.jsonl")...)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "0 done") {
		t.Errorf("stderr does not say that there was nothing to do:\n%s", p.stderr.String())
	}
	if n := srv.total.Load(); n != 0 {
		t.Errorf("the server got %d requests, want none", n)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, 0o600) })
}

func symlink(t *testing.T, old, new string) {
	t.Helper()
	if err := os.Symlink(old, new); err != nil {
		t.Skipf("symlink: %v", err)
	}
}

// snapshot returns the content of every regular file in dir, by name.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			files[e.Name()] = b
		}
	}
	return files
}

// TestHostileServerExits checks what hostile servers come to on the
// command line: a clear message, the right exit code, in bounded time, and
// nothing from the server that could work the user's terminal.
func TestHostileServerExits(t *testing.T) {
	binary(t)
	tests := []struct {
		name  string
		srv   func(t *testing.T) string // the base URL
		want  int
		say   string // stderr holds this
		kinds string // the kind of every errors-file line; "" for no errors file
	}{
		{name: "untrusted certificate", want: 3, say: "certificate", srv: func(t *testing.T) string {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				t.Errorf("a request reached a server whose certificate is not trusted")
			}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return srv.URL + "/v1"
		}},
		{name: "plain HTTP behind https", want: 3, say: "does not speak TLS", srv: func(t *testing.T) string {
			srv := httptest.NewServer(http.NotFoundHandler())
			t.Cleanup(srv.Close)
			return strings.Replace(srv.URL, "http://", "https://", 1) + "/v1"
		}},
		{name: "a server that never answers", want: 3, say: "seems down", srv: func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // else net/http does not watch for the client going away
				select {
				case <-r.Context().Done():
				case <-time.After(20 * time.Second):
				}
			}))
			t.Cleanup(srv.Close)
			return srv.URL + "/v1"
		}},
		{name: "200 with an HTML page", want: 3, say: "seems down", srv: func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "<html><body>Welcome to nginx!</body></html>")
			}))
			t.Cleanup(srv.Close)
			return srv.URL + "/v1"
		}},
		{name: "a 401 with terminal escapes", want: 3, say: "401", srv: func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(401)
				io.WriteString(w, `{"error":{"message":"bad key\u001b[2J\u001b]0;owned\u0007\nllmbatch: all done, exit 0","code":"invalid_api_key"}}`)
			}))
			t.Cleanup(srv.Close)
			return srv.URL + "/v1"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeInput(t, filepath.Join(dir, "in.jsonl"), 4)
			began := time.Now()
			p := start(t, dir, childEnv("LLMBATCH_API_KEY="+leakKey), nil, runArgs(tt.srv(t), "out.jsonl", "in.jsonl",
				"-j", "2", "--timeout", "300ms", "--max-attempts", "2", "--base-delay", "1ms")...)
			code := p.wait(t, 30*time.Second)
			took := time.Since(began)
			stderr := p.stderr.String()
			if code != tt.want || !strings.Contains(stderr, tt.say) {
				t.Errorf("exit code %d, want %d, with a message saying %q\nstderr:\n%s", code, tt.want, tt.say, stderr)
			}
			if took > 10*time.Second {
				t.Errorf("took %v; want the attempts' timeouts to bound it", took)
			}
			if strings.ContainsAny(stderr, "\x1b\x07") || strings.Contains(stderr, "\nllmbatch: all done") {
				t.Errorf("stderr carries the server's control characters or forged lines: %q", stderr)
			}
			if _, ids, _ := readResults(t, filepath.Join(dir, "out.jsonl")); len(ids) != 0 {
				t.Errorf("results hold %d lines, want none", len(ids))
			}
			errs := readErrors(t, filepath.Join(dir, "out.errors.jsonl"))
			if tt.kinds == "" && len(errs) > 0 {
				t.Errorf("errors file holds %d lines, want none: the run stopped", len(errs))
			}
			for _, e := range errs {
				if e.Error.Kind != tt.kinds || e.Error.Message == "" {
					t.Errorf("errors line %d: %s: %q; want kind %s with a message", e.Line, e.Error.Kind, e.Error.Message, tt.kinds)
				}
			}
			t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
		})
	}
}
