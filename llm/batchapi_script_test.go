package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const batchBody = `{"id":"batch_1","object":"batch","endpoint":"/v1/chat/completions","input_file_id":"file-1","completion_window":"24h","status":"validating","created_at":1,"request_counts":{"total":0,"completed":0,"failed":0}}`

// A create that fails in any way is sent once: it may have created the
// batch, and a second would bill every line twice.
func TestCreateBatchIsNeverRetried(t *testing.T) {
	for _, rp := range []reply{{status: 502}, {status: 500}, {status: 429, body: `{"error":{"code":"rate_limit_exceeded"}}`}, {hang: true}} {
		s := scripted(t, rp)
		c := newTestClient(t, s.URL(), func(c *Config) { c.MaxAttempts = 5; c.Timeout = 200 * time.Millisecond })
		_, err := c.CreateBatch(t.Context(), "file-1", map[string]string{"llmbatch_job": "j"})
		var ae *APIError
		if !errors.As(err, &ae) || !ae.Kind.Retryable() {
			t.Errorf("CreateBatch against %+v = %v, want a retryable *APIError", rp, err)
		}
		if n := len(s.requests()); n != 1 {
			t.Errorf("CreateBatch against %+v sent %d requests, want 1", rp, n)
		}
	}
}

// Reads and cancels are retried like chat requests, and the requests carry
// the key and the right method and path.
func TestBatchReadsAreRetried(t *testing.T) {
	s := scripted(t, reply{status: 502}, reply{status: 503}, reply{body: batchBody},
		reply{status: 500}, reply{body: batchBody})
	c := newTestClient(t, s.URL(), nil)
	b, err := c.GetBatch(t.Context(), "batch_1")
	if err != nil || b.ID != "batch_1" || b.Status != BatchValidating {
		t.Fatalf("GetBatch = %+v, %v; want batch_1 validating", b, err)
	}
	if _, err := c.CancelBatch(t.Context(), "batch_1"); err != nil {
		t.Fatalf("CancelBatch = %v", err)
	}
	reqs := s.requests()
	want := []string{"GET /v1/batches/batch_1", "GET /v1/batches/batch_1", "GET /v1/batches/batch_1",
		"POST /v1/batches/batch_1/cancel", "POST /v1/batches/batch_1/cancel"}
	for i, r := range reqs {
		if got := r.method + " " + r.path; got != want[i] {
			t.Errorf("request %d = %s, want %s", i+1, got, want[i])
		}
		if got := r.header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("request %d: Authorization = %q, want the key", i+1, got)
		}
	}
}

// A 4xx is not retried, and no error shows the key even when the server
// echoes the request's Authorization back.
func TestBatchErrorsHideTheKey(t *testing.T) {
	echo := `{"error":{"message":"bad header {auth}","code":"invalid_api_key"}}`
	calls := map[string]func(*Client) error{
		"UploadFile": func(c *Client) error {
			_, err := c.UploadFile(t.Context(), "in.jsonl", strings.NewReader("{}\n"), 3)
			return err
		},
		"GetFile":     func(c *Client) error { _, err := c.GetFile(t.Context(), "file-1"); return err },
		"DeleteFile":  func(c *Client) error { return c.DeleteFile(t.Context(), "file-1") },
		"CreateBatch": func(c *Client) error { _, err := c.CreateBatch(t.Context(), "file-1", nil); return err },
		"GetBatch":    func(c *Client) error { _, err := c.GetBatch(t.Context(), "b"); return err },
		"CancelBatch": func(c *Client) error { _, err := c.CancelBatch(t.Context(), "b"); return err },
		"ListBatches": func(c *Client) error { return c.ListBatches(t.Context(), func(Batch) bool { return true }) },
		"FileContent": func(c *Client) error { _, err := c.FileContent(t.Context(), "file-1"); return err },
	}
	for name, call := range calls {
		for _, status := range []int{401, 400} {
			s := scripted(t, reply{status: status, body: echo})
			err := call(newTestClient(t, s.URL(), nil))
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != status {
				t.Errorf("%s against a %d = %v, want an *APIError with status %d", name, status, err, status)
			}
			checkNoKey(t, err)
		}
	}
}

// A download whose server stalls ends with a Transient error once a read
// has waited the client's Timeout; a slow reader is not cut off.
func TestFileContentStall(t *testing.T) {
	s := scripted(t, reply{body: strings.Repeat("x", 10), trickle: time.Hour}, reply{body: "abc\n"})
	c := newTestClient(t, s.URL(), func(c *Config) { c.Timeout = 100 * time.Millisecond })
	rc, err := c.FileContent(t.Context(), "file-1")
	if err != nil {
		t.Fatalf("FileContent = %v", err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	var ae *APIError
	if !errors.As(err, &ae) || ae.Kind != Transient {
		t.Errorf("reading a stalled download = %v, want a Transient *APIError", err)
	}

	rc, err = c.FileContent(t.Context(), "file-2")
	if err != nil {
		t.Fatalf("FileContent = %v", err)
	}
	defer rc.Close()
	time.Sleep(300 * time.Millisecond) // the caller is slow, not the server
	if b, err := io.ReadAll(rc); err != nil || string(b) != "abc\n" {
		t.Errorf("reading after a pause = %q, %v; want abc", b, err)
	}
}

// A cancelled context ends a call with the context's error, unwrapped.
func TestBatchCallContext(t *testing.T) {
	s := scripted(t, reply{hang: true})
	c := newTestClient(t, s.URL(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.GetBatch(ctx, "b"); err != context.DeadlineExceeded {
		t.Errorf("GetBatch with an ending context = %v, want context.DeadlineExceeded", err)
	}
}

// The upload is a multipart form with purpose=batch and the file's bytes,
// sent again whole on a retry.
func TestUploadFileForm(t *testing.T) {
	s := scripted(t, reply{status: 503}, reply{body: `{"id":"file-1","object":"file","bytes":6,"purpose":"batch","filename":"in.jsonl"}`})
	c := newTestClient(t, s.URL(), nil)
	content := []byte("line1\n")
	f, err := c.UploadFile(t.Context(), "in.jsonl", bytes.NewReader(content), int64(len(content)))
	if err != nil || f.ID != "file-1" {
		t.Fatalf("UploadFile = %+v, %v; want file-1", f, err)
	}
	for i, r := range s.requests() {
		req, _ := http.NewRequest("POST", "/", bytes.NewReader(r.body))
		req.Header.Set("Content-Type", r.header.Get("Content-Type"))
		if err := req.ParseMultipartForm(1 << 20); err != nil {
			t.Fatalf("request %d: not a multipart form: %v", i+1, err)
		}
		if got := req.FormValue("purpose"); got != "batch" {
			t.Errorf("request %d: purpose = %q, want batch", i+1, got)
		}
		file, hdr, err := req.FormFile("file")
		if err != nil {
			t.Fatalf("request %d: no file: %v", i+1, err)
		}
		got, _ := io.ReadAll(file)
		if string(got) != string(content) || hdr.Filename != "in.jsonl" {
			t.Errorf("request %d: file %q = %q, want in.jsonl = %q", i+1, hdr.Filename, got, content)
		}
	}
}

// Lines of an output or error file read as online results and errors.
func TestBatchResultLine(t *testing.T) {
	file := `{"id":"r1","custom_id":"a","response":{"status_code":200,"request_id":"req-1","body":` + okBody + `},"error":null}
{"id":"r2","custom_id":"b","response":{"status_code":400,"request_id":"req-2","body":{"error":{"message":"bad","code":"invalid"}}},"error":null}
{"id":"r3","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"not done in time"}}

{"id":"r4","custom_id":"d","response":{"status_code":200,"body":{"object":"chat.completion","choices":[]}},"error":null}
{"id":"r5","custom_id":"e","response":{"status_code":500,"body":{"error":{"message":"oops"}}},"error":null}
{"id":"r6","custom_id":"f","response":null,"error":{"code":"insufficient_quota","message":"spent"}}
`
	want := map[string]Kind{"a": 0, "b": BadRequest, "c": Transient, "d": Transient, "e": Transient, "f": QuotaSpent}
	seen := 0
	err := ReadBatchResults(strings.NewReader(file), func(l BatchResultLine) error {
		seen++
		resp, err := l.Result()
		var ae *APIError
		switch k := want[l.CustomID]; {
		case k == 0 && (err != nil || resp.Content() != "hi" || resp.RequestID != "req-1"):
			t.Errorf("line %s: Result() = %+v, %v; want the answer hi of req-1", l.CustomID, resp, err)
		case k != 0 && (!errors.As(err, &ae) || ae.Kind != k):
			t.Errorf("line %s: Result() error = %v, want kind %v", l.CustomID, err, k)
		}
		return nil
	})
	if err != nil || seen != len(want) {
		t.Errorf("ReadBatchResults = %v after %d lines, want nil after %d", err, seen, len(want))
	}
	err = ReadBatchResults(strings.NewReader("{\"custom_id\":\"a\"}\nnot json\n"), func(BatchResultLine) error { return nil })
	if !errors.Is(err, ErrBadResultLine) {
		t.Errorf("ReadBatchResults of a broken line = %v, want ErrBadResultLine", err)
	}
	stop := errors.New("stop")
	if err := ReadBatchResults(strings.NewReader(file), func(BatchResultLine) error { return stop }); err != stop {
		t.Errorf("ReadBatchResults with fn failing = %v, want fn's error", err)
	}
}
