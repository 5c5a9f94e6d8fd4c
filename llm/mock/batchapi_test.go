package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// fakeClock is a clock the test moves by hand; safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newBatchServer serves New(cfg) with its batch clock at clk.
func newBatchServer(t *testing.T, cfg Config) (string, *Handler, *fakeClock) {
	t.Helper()
	srv, h := newServer(t, cfg)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	h.batches.now = clk.Now
	return srv.URL, h, clk
}

// uploadForm returns a multipart body of the given fields, "file" as a file.
func uploadForm(t *testing.T, fields map[string]string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		var err error
		if k == "file" {
			var w interface{ Write([]byte) (int, error) }
			if w, err = mw.CreateFormFile("file", "in.jsonl"); err == nil {
				_, err = w.Write([]byte(v))
			}
		} else {
			err = mw.WriteField(k, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mw.Close()
	return buf.String(), mw.FormDataContentType()
}

func requestLine(id, url, body string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":%q,"body":%s}`, id, url, body) + "\n"
}

// uploadLines uploads lines as a batch input file and returns its id.
func uploadLines(t *testing.T, base string, lines ...string) string {
	t.Helper()
	body, ctype := uploadForm(t, map[string]string{"purpose": "batch", "file": strings.Join(lines, "")})
	r := do(t, "POST", base+"/v1/files", body, "Content-Type", ctype)
	var f llm.FileObject
	if r.status != 200 || json.Unmarshal(r.body, &f) != nil || f.ID == "" {
		t.Fatalf("upload = %d %s, want 200 and a file", r.status, r.body)
	}
	return f.ID
}

func decodeBatch(t *testing.T, r reply) llm.Batch {
	t.Helper()
	var b llm.Batch
	if r.status != 200 || json.Unmarshal(r.body, &b) != nil {
		t.Fatalf("status %d, body %s: want 200 and a batch", r.status, r.body)
	}
	return b
}

func errorCode(t *testing.T, r reply) string {
	t.Helper()
	var e llm.ErrorBody
	if json.Unmarshal(r.body, &e) != nil {
		t.Fatalf("body %s is not an error", r.body)
	}
	var code string
	json.Unmarshal(e.Error.Code, &code)
	return code
}

const okLine = `{"model":"mock-1","messages":[{"role":"user","content":"hi"}]}`

// A batch's state is a function of time: each phase in turn, then the end.
func TestBatchStateOverTime(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cfg := BatchConfig{Delay: 10 * time.Second, LineTime: time.Second, Expire: time.Hour}.withDefaults()
	lines := []fileLine{{"a", llm.BatchEndpoint, []byte(okLine)}, {"b", llm.BatchEndpoint, []byte(okLine)},
		{"c", llm.BatchEndpoint, []byte(`{"messages":[]}`)}, {"d", llm.BatchEndpoint, []byte(okLine)}}
	// validating 0-10s, in_progress 10-24s (a line every 3.5s), finalizing 24-34s
	tests := []struct {
		at     time.Duration
		status llm.BatchStatus
		done   int
	}{
		{0, llm.BatchValidating, 0}, {9 * time.Second, llm.BatchValidating, 0},
		{10 * time.Second, llm.BatchInProgress, 0}, {14 * time.Second, llm.BatchInProgress, 1},
		{21 * time.Second, llm.BatchInProgress, 3}, {24 * time.Second, llm.BatchFinalizing, 4},
		{34 * time.Second, llm.BatchCompleted, 4}, {48 * time.Hour, llm.BatchCompleted, 4},
	}
	j := newJob(1, llm.Batch{Endpoint: llm.BatchEndpoint}, lines, cfg, 0, t0)
	for _, tt := range tests {
		if status, done := j.state(t0.Add(tt.at)); status != tt.status || done != tt.done {
			t.Errorf("state(+%v) = %s, %d; want %s, %d", tt.at, status, done, tt.status, tt.done)
		}
	}
	if got := j.failures[len(j.lines)]; got != 1 {
		t.Errorf("failures = %d, want 1 (the line with no messages)", got)
	}

	expiring := newJob(2, llm.Batch{Endpoint: llm.BatchEndpoint}, lines, BatchConfig{Delay: 10 * time.Second, Expire: 15 * time.Second}.withDefaults(), 0, t0)
	if status, done := expiring.state(t0.Add(15 * time.Second)); status != llm.BatchExpired || done != 2 {
		t.Errorf("state at expiry = %s, %d; want expired keeping 2", status, done)
	}
	cancelled := newJob(3, llm.Batch{Endpoint: llm.BatchEndpoint}, lines, cfg, 0, t0)
	cancelled.cancelAt = t0.Add(14 * time.Second)
	for at, want := range map[time.Duration]llm.BatchStatus{20 * time.Second: llm.BatchCancelling, 24 * time.Second: llm.BatchCancelled} {
		if status, done := cancelled.state(t0.Add(at)); status != want || done != 1 {
			t.Errorf("cancelled at +14s: state(+%v) = %s, %d; want %s, 1", at, status, done, want)
		}
	}
}

// A file whose lines do not fit the batch fails it after validating, with
// the lines at fault listed.
func TestBatchFailsValidation(t *testing.T) {
	base, _, clk := newBatchServer(t, Config{})
	id := uploadLines(t, base, requestLine("a", llm.BatchEndpoint, okLine),
		requestLine("b", "/v1/embeddings", okLine),
		requestLine("c", llm.BatchEndpoint, `{"model":"other","messages":[{"role":"user","content":"x"}]}`))
	b := decodeBatch(t, do(t, "POST", base+"/v1/batches", `{"input_file_id":"`+id+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	clk.Add(time.Second)
	b = decodeBatch(t, do(t, "GET", base+"/v1/batches/"+b.ID, ""))
	if b.Status != llm.BatchFailed || b.Errors == nil || len(b.Errors.Data) != 2 || b.OutputFileID != "" {
		t.Fatalf("batch = %+v, want failed with 2 errors and no output", b)
	}
	if e := b.Errors.Data; e[0].Line != 2 || e[0].Code != "invalid_url" || e[1].Line != 3 || e[1].Code != "mismatched_model" {
		t.Errorf("errors = %+v, want line 2 invalid_url, line 3 mismatched_model", e)
	}
}

func TestBatchRequestsRefused(t *testing.T) {
	base, _, _ := newBatchServer(t, Config{})
	id := uploadLines(t, base, requestLine("a", llm.BatchEndpoint, okLine))
	meta := map[string]string{}
	for i := range 17 {
		meta[fmt.Sprint("k", i)] = "v"
	}
	tooMany, _ := json.Marshal(map[string]any{"input_file_id": id, "endpoint": llm.BatchEndpoint, "completion_window": "24h", "metadata": meta})
	create := func(file, endpoint, window string) string {
		return fmt.Sprintf(`{"input_file_id":%q,"endpoint":%q,"completion_window":%q}`, file, endpoint, window)
	}
	form, ctype := uploadForm(t, map[string]string{"purpose": "fine-tune", "file": requestLine("a", llm.BatchEndpoint, okLine)})
	noFile, ctype2 := uploadForm(t, map[string]string{"purpose": "batch"})
	tests := []struct {
		name, method, path, body string
		header                   []string
		status                   int
	}{
		{"unknown file", "POST", "/v1/batches", create("file-nope", llm.BatchEndpoint, "24h"), nil, 400},
		{"other endpoint", "POST", "/v1/batches", create(id, "/v1/embeddings", "24h"), nil, 400},
		{"other window", "POST", "/v1/batches", create(id, llm.BatchEndpoint, "1h"), nil, 400},
		{"17 metadata pairs", "POST", "/v1/batches", string(tooMany), nil, 400},
		{"not JSON", "POST", "/v1/batches", "{", nil, 400},
		{"unknown batch", "GET", "/v1/batches/batch_nope", "", nil, 404},
		{"cancel unknown", "POST", "/v1/batches/batch_nope/cancel", "", nil, 404},
		{"limit 0", "GET", "/v1/batches?limit=0", "", nil, 400},
		{"unknown cursor", "GET", "/v1/batches?after=batch_nope", "", nil, 400},
		{"unknown file content", "GET", "/v1/files/file-nope/content", "", nil, 404},
		{"upload not multipart", "POST", "/v1/files", "{}", nil, 400},
		{"upload for fine-tune", "POST", "/v1/files", form, []string{"Content-Type", ctype}, 400},
		{"upload with no file", "POST", "/v1/files", noFile, []string{"Content-Type", ctype2}, 400},
		{"wrong method", "PUT", "/v1/batches", "", nil, 404},
	}
	for _, tt := range tests {
		if r := do(t, tt.method, base+tt.path, tt.body, tt.header...); r.status != tt.status || errorCode(t, r) == "" {
			t.Errorf("%s: %s %s = %d %s, want %d with an error code", tt.name, tt.method, tt.path, r.status, r.body, tt.status)
		}
	}
}

// Files are read back, deleted, and a batch outlives its deleted input.
func TestBatchFiles(t *testing.T) {
	base, h, clk := newBatchServer(t, Config{})
	content := requestLine("a", llm.BatchEndpoint, okLine)
	id := uploadLines(t, base, content)
	if r := do(t, "GET", base+"/v1/files/"+id+"/content", ""); r.status != 200 || string(r.body) != content {
		t.Errorf("content = %d %q, want %q", r.status, r.body, content)
	}
	b := decodeBatch(t, do(t, "POST", base+"/batches", `{"input_file_id":"`+id+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	if r := do(t, "DELETE", base+"/v1/files/"+id, ""); r.status != 200 || !strings.Contains(string(r.body), `"deleted":true`) {
		t.Errorf("delete = %d %s, want deleted", r.status, r.body)
	}
	if r := do(t, "GET", base+"/v1/files/"+id, ""); r.status != 404 {
		t.Errorf("get of a deleted file = %d, want 404", r.status)
	}
	clk.Add(time.Hour)
	b = decodeBatch(t, do(t, "GET", base+"/v1/batches/"+b.ID, ""))
	var f llm.FileObject
	r := do(t, "GET", base+"/v1/files/"+b.OutputFileID, "")
	if b.Status != llm.BatchCompleted || json.Unmarshal(r.body, &f) != nil || f.Purpose != "batch_output" || f.Bytes == 0 {
		t.Errorf("batch %+v, output file %s: want completed with a batch_output file", b, r.body)
	}
	if s := h.BatchStats(); s != (BatchStats{Files: 1, Batches: 1, Lines: 1}) {
		t.Errorf("BatchStats = %+v, want 1 file, 1 batch, 1 line", s)
	}
}

func TestParseBatchOptions(t *testing.T) {
	cfg, err := ParseOptions("rpm=5,batch_delay=2s,batch_line=10ms,batch_fail=0.1,batch_expire=1h,batch_max_requests=100,batch_max_bytes=1000,batch_unfinished=errors")
	want := BatchConfig{Delay: 2 * time.Second, LineTime: 10 * time.Millisecond, FailRate: 0.1, Expire: time.Hour, MaxRequests: 100, MaxBytes: 1000, Unfinished: true}
	if err != nil || cfg.Batch != want || cfg.RPM != 5 {
		t.Errorf("ParseOptions = %+v, %v; want Batch %+v", cfg, err, want)
	}
	for _, bad := range []string{"batch_fail=2", "batch_delay=-1s", "batch_max_bytes=x", "batch_max_requests=-1", "batch_unfinished=yes", "batch_nope=1"} {
		if _, err := ParseOptions(bad); err == nil {
			t.Errorf("ParseOptions(%q) = nil error, want one", bad)
		}
	}
}

// FuzzBatchOutput: whatever the size, share of faults, expiry and cancel,
// a done batch's two files hold each kept line once, as many as its counts
// say, all of them when it completed (or, with Unfinished, when it expired
// or was cancelled), and no id it was not given.
func FuzzBatchOutput(f *testing.F) {
	f.Add(uint16(50), uint8(0), uint64(1), uint16(0), uint16(0))
	f.Add(uint16(300), uint8(128), uint64(2), uint16(0), uint16(0))
	f.Add(uint16(200), uint8(255), uint64(3), uint16(40), uint16(0))
	f.Add(uint16(200), uint8(30), uint64(4), uint16(0), uint16(90))
	f.Add(uint16(1), uint8(10), uint64(5), uint16(1), uint16(1))
	f.Fuzz(func(t *testing.T, n uint16, fail uint8, seed uint64, cancelAfter, expireAfter uint16) {
		n = n%2000 + 1
		unfinished := seed%2 == 1
		h := New(Config{Seed: seed, Batch: BatchConfig{Delay: 10 * time.Second, LineTime: time.Second,
			FailRate: float64(fail) / 255, Expire: time.Duration(expireAfter) * time.Second, Unfinished: unfinished}})
		s := &h.batches
		var lines []fileLine
		for i := range int(n) {
			lines = append(lines, fileLine{fmt.Sprint("id-", i), llm.BatchEndpoint, []byte(okLine)})
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.addJob(h, &storedFile{obj: llm.FileObject{ID: "file-x"}, lines: lines}, llm.BatchEndpoint, "24h", nil)
		if cancelAfter > 0 {
			if status, _ := j.state(j.created.Add(time.Duration(cancelAfter) * time.Second)); !status.Done() {
				j.cancelAt = j.created.Add(time.Duration(cancelAfter) * time.Second)
			}
		}
		b := s.view(h, j, j.created.Add(48*time.Hour))
		seen := map[string]bool{}
		for _, id := range []string{b.OutputFileID, b.ErrorFileID} {
			if id == "" {
				continue
			}
			err := llm.ReadBatchResults(bytes.NewReader(s.files[id].data), func(l llm.BatchResultLine) error {
				if seen[l.CustomID] || !strings.HasPrefix(l.CustomID, "id-") {
					return fmt.Errorf("custom_id %q twice or not asked for", l.CustomID)
				}
				seen[l.CustomID] = true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		rc := b.RequestCounts
		all := b.Status == llm.BatchCompleted || (unfinished && b.Status != llm.BatchFailed)
		if !b.Status.Done() || len(seen) != rc.Completed+rc.Failed || (all && len(seen) != int(n)) {
			t.Fatalf("batch %s of %d lines: %d lines in its files, counts %+v", b.Status, n, len(seen), rc)
		}
	})
}

// BenchmarkBatchOutput measures a full shard of 50,000 lines: checking the
// lines at create, and answering them into the output file when done.
func BenchmarkBatchOutput(b *testing.B) {
	var lines []fileLine
	for i := range DefaultBatchMaxRequests {
		lines = append(lines, fileLine{fmt.Sprint("id-", i), llm.BatchEndpoint, []byte(okLine)})
	}
	h := New(Config{})
	s := &h.batches
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		j := s.addJob(h, &storedFile{obj: llm.FileObject{ID: "file-x"}, lines: lines}, llm.BatchEndpoint, "24h", nil)
		s.view(h, j, j.created.Add(time.Hour))
		delete(s.files, j.obj.OutputFileID) // keep memory flat across rounds
		s.mu.Unlock()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/DefaultBatchMaxRequests, "ns/line")
}
