package llm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

const batchKey = "sk-batch-test-9876543210fedcba"

// memHTTP serves requests with the mock handler in memory, so that a
// batch's life plays under synctest's fake clock; the handler is the one
// the sockets of the other tests reach.
type memHTTP struct{ h http.Handler }

func (m memHTTP) Do(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// batchClient returns a client of the mock h: over a socket of an httptest
// server, or in memory when mem is set (inside a synctest bubble).
func batchClient(t *testing.T, h *mock.Handler, mem bool) *llm.Client {
	t.Helper()
	cfg := llm.Config{BaseURL: "http://mock.invalid/v1", APIKey: batchKey, MaxAttempts: 3, Backoff: func(int) time.Duration { return 0 }}
	if mem {
		cfg.HTTPClient = memHTTP{h}
	} else {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		cfg.BaseURL = srv.URL + "/v1"
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func prompt(i int) string { return "prompt number " + strconv.Itoa(i) }

// input returns a batch input file of n chat requests with custom_ids
// id-0 ... id-(n-1); bad(i) lines have a body with no messages.
func input(t *testing.T, n int, bad func(int) bool) []byte {
	t.Helper()
	var file []byte
	for i := range n {
		body := map[string]any{"model": "mock-1", "messages": []llm.Message{llm.TextMessage("user", prompt(i))}}
		if bad != nil && bad(i) {
			delete(body, "messages")
		}
		b, _ := json.Marshal(body)
		var err error
		if file, err = llm.AppendBatchLine(file, "id-"+strconv.Itoa(i), b); err != nil {
			t.Fatal(err)
		}
	}
	return file
}

// submit uploads file and creates a batch of it.
func submit(t *testing.T, c *llm.Client, file []byte, meta map[string]string) llm.Batch {
	t.Helper()
	f, err := c.UploadFile(t.Context(), "in.jsonl", bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatalf("UploadFile = %v", err)
	}
	if f.Bytes != int64(len(file)) || f.Purpose != "batch" {
		t.Errorf("UploadFile = %+v, want %d bytes, purpose batch", f, len(file))
	}
	b, err := c.CreateBatch(t.Context(), f.ID, meta)
	if err != nil {
		t.Fatalf("CreateBatch(%s) = %v", f.ID, err)
	}
	return b
}

// poll gets the batch every step until it is done, checking on the way
// that its counts never go down, and returns it with the states seen.
func poll(t *testing.T, c *llm.Client, id string, step time.Duration) (llm.Batch, []llm.BatchStatus) {
	t.Helper()
	var states []llm.BatchStatus
	var last llm.BatchCounts
	for {
		b, err := c.GetBatch(t.Context(), id)
		if err != nil {
			t.Fatalf("GetBatch(%s) = %v", id, err)
		}
		if n := len(states); n == 0 || states[n-1] != b.Status {
			states = append(states, b.Status)
		}
		if rc := b.RequestCounts; rc.Completed < last.Completed || rc.Failed < last.Failed {
			t.Fatalf("counts went from %+v to %+v", last, rc)
		}
		last = b.RequestCounts
		if b.Status.Done() {
			return b, states
		}
		time.Sleep(step)
	}
}

// results downloads a file of the batch ("" for none) and returns its lines
// by custom_id, failing the test on an id seen twice.
func results(t *testing.T, c *llm.Client, fileID string, into map[string]llm.BatchResultLine) []string {
	t.Helper()
	var order []string
	if fileID == "" {
		return nil
	}
	rc, err := c.FileContent(t.Context(), fileID)
	if err != nil {
		t.Fatalf("FileContent(%s) = %v", fileID, err)
	}
	defer rc.Close()
	err = llm.ReadBatchResults(rc, func(l llm.BatchResultLine) error {
		if _, dup := into[l.CustomID]; dup {
			return fmt.Errorf("custom_id %s answered twice", l.CustomID)
		}
		into[l.CustomID] = l
		order = append(order, l.CustomID)
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", fileID, err)
	}
	return order
}

func TestBatchRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		h := mock.New(mock.Config{APIKey: batchKey, Batch: mock.BatchConfig{Delay: time.Second, LineTime: 100 * time.Millisecond}})
		c := batchClient(t, h, true)
		b := submit(t, c, input(t, n, nil), map[string]string{"llmbatch_job": "j1", "llmbatch_shard": "0"})
		if b.Status != llm.BatchValidating || b.Metadata["llmbatch_shard"] != "0" {
			t.Errorf("CreateBatch = %+v, want validating with its metadata", b)
		}
		b, states := poll(t, c, b.ID, 2*time.Second)
		want := []llm.BatchStatus{llm.BatchValidating, llm.BatchInProgress, llm.BatchFinalizing, llm.BatchCompleted}
		if fmt.Sprint(states) != fmt.Sprint(want) {
			t.Errorf("states = %v, want %v", states, want)
		}
		if b.RequestCounts != (llm.BatchCounts{Total: n, Completed: n}) || b.ErrorFileID != "" {
			t.Errorf("completed batch = %+v, want %d completed, no error file", b, n)
		}
		got := map[string]llm.BatchResultLine{}
		order := results(t, c, b.OutputFileID, got)
		if len(got) != n {
			t.Fatalf("output has %d lines, want %d", len(got), n)
		}
		inOrder := true
		for i := range n {
			l, ok := got["id-"+strconv.Itoa(i)]
			resp, err := l.Result()
			if !ok || err != nil || resp.Content() != mock.Answer(prompt(i)) {
				t.Fatalf("line id-%d = %+v (%v), want the answer %q", i, l, err, mock.Answer(prompt(i)))
			}
			inOrder = inOrder && order[i] == "id-"+strconv.Itoa(i)
		}
		if inOrder {
			t.Error("the output is in the input's order; the Batch API promises no order, and the mock should not give one")
		}
		if s := h.BatchStats(); s.Files != 1 || s.Batches != 1 || s.Lines != n {
			t.Errorf("BatchStats = %+v, want 1 file, 1 batch, %d lines", s, n)
		}
	})
}

// Every input line ends in exactly one of the two files, whatever the share
// of failures, and the failures read as online errors: injected faults
// transient, a body that is no chat request a bad request.
func TestBatchLineErrors(t *testing.T) {
	for seed := range uint64(5) {
		synctest.Test(t, func(t *testing.T) {
			const n = 200
			h := mock.New(mock.Config{Seed: seed, Batch: mock.BatchConfig{FailRate: 0.2 * float64(seed)}})
			c := batchClient(t, h, true)
			bad := func(i int) bool { return i%17 == 3 }
			b, _ := poll(t, c, submit(t, c, input(t, n, bad), nil).ID, time.Second)
			lines := map[string]llm.BatchResultLine{}
			results(t, c, b.OutputFileID, lines)
			ok := len(lines)
			results(t, c, b.ErrorFileID, lines)
			if len(lines) != n || ok != b.RequestCounts.Completed || len(lines)-ok != b.RequestCounts.Failed {
				t.Fatalf("seed %d: %d output + %d error lines, counts %+v; want %d in all, as counted",
					seed, ok, len(lines)-ok, b.RequestCounts, n)
			}
			for i := range n {
				_, err := lines["id-"+strconv.Itoa(i)].Result()
				var ae *llm.APIError
				switch {
				case bad(i) && (!errors.As(err, &ae) || ae.Kind != llm.BadRequest || ae.Status != 400):
					t.Errorf("seed %d: line %d with no messages: Result() = %v, want a 400 BadRequest", seed, i, err)
				case !bad(i) && err != nil && (!errors.As(err, &ae) || ae.Kind != llm.Transient):
					t.Errorf("seed %d: line %d: Result() = %v, want success or a Transient fault", seed, i, err)
				}
			}
			if seed == 4 && ok > n/2 {
				t.Errorf("seed %d: batch_fail=0.8 left %d of %d lines answered", seed, ok, n)
			}
		})
	}
}

// A batch that runs past its expiry keeps what it finished; the rest is in
// neither file.
func TestBatchExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		h := mock.New(mock.Config{Batch: mock.BatchConfig{Delay: time.Minute, LineTime: time.Minute, Expire: time.Hour}})
		c := batchClient(t, h, true)
		b, states := poll(t, c, submit(t, c, input(t, n, nil), nil).ID, 5*time.Minute)
		if b.Status != llm.BatchExpired || states[len(states)-2] != llm.BatchInProgress {
			t.Fatalf("states %v, batch %+v: want in_progress, then expired", states, b)
		}
		lines := map[string]llm.BatchResultLine{}
		results(t, c, b.OutputFileID, lines)
		// 59 minutes of a 101-minute in_progress: 58 of 100 lines.
		if len(lines) != b.RequestCounts.Completed || len(lines) != 58 || b.RequestCounts.Total != n {
			t.Errorf("expired batch kept %d lines, counts %+v; want 58 of %d", len(lines), b.RequestCounts, n)
		}
		if b.ExpiredAt-b.CreatedAt != 3600 || b.CompletedAt != 0 {
			t.Errorf("expired_at - created_at = %d, completed_at = %d; want 3600 and 0", b.ExpiredAt-b.CreatedAt, b.CompletedAt)
		}
	})
}

// With batch_unfinished=errors, the lines an expired batch did not finish
// are in its error file as batch_expired, which reads as Transient.
func TestBatchExpiryListsUnfinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		h := mock.New(mock.Config{Batch: mock.BatchConfig{Delay: time.Minute, LineTime: time.Minute, Expire: time.Hour, Unfinished: true}})
		c := batchClient(t, h, true)
		b, _ := poll(t, c, submit(t, c, input(t, n, nil), nil).ID, 5*time.Minute)
		ok, all := map[string]llm.BatchResultLine{}, map[string]llm.BatchResultLine{}
		results(t, c, b.OutputFileID, ok)
		results(t, c, b.ErrorFileID, all)
		if b.Status != llm.BatchExpired || len(ok) != 58 || len(all) != n-58 || b.RequestCounts != (llm.BatchCounts{Total: n, Completed: 58, Failed: n - 58}) {
			t.Fatalf("expired batch %+v: %d output and %d error lines, want 58 and %d", b, len(ok), len(all), n-58)
		}
		for id, l := range all {
			_, err := l.Result()
			var ae *llm.APIError
			if _, dup := ok[id]; dup || !errors.As(err, &ae) || ae.Kind != llm.Transient || ae.Code != "batch_expired" {
				t.Errorf("unfinished line %s: Result() = %v (in the output too: %v), want a Transient batch_expired", id, err, dup)
			}
		}
	})
}

func TestBatchCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		h := mock.New(mock.Config{Batch: mock.BatchConfig{Delay: time.Second, LineTime: time.Second}})
		c := batchClient(t, h, true)
		b := submit(t, c, input(t, n, nil), nil)
		time.Sleep(41 * time.Second) // in_progress for 40s of 101s: 39 lines done
		b, err := c.CancelBatch(t.Context(), b.ID)
		if err != nil || b.Status != llm.BatchCancelling || b.RequestCounts.Completed != 39 {
			t.Fatalf("CancelBatch = %+v, %v; want cancelling with 39 lines done", b, err)
		}
		if again, err := c.CancelBatch(t.Context(), b.ID); err != nil || again.Status != llm.BatchCancelling {
			t.Errorf("CancelBatch again = %+v, %v; want it still cancelling", again, err)
		}
		b, _ = poll(t, c, b.ID, 300*time.Millisecond)
		lines := map[string]llm.BatchResultLine{}
		results(t, c, b.OutputFileID, lines)
		if b.Status != llm.BatchCancelled || len(lines) != 39 || b.CancelledAt == 0 {
			t.Errorf("cancelled batch %+v kept %d lines, want cancelled with 39", b, len(lines))
		}
		done, _ := poll(t, c, submit(t, c, input(t, 1, nil), nil).ID, time.Second)
		_, err = c.CancelBatch(t.Context(), done.ID)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Kind != llm.BadRequest {
			t.Errorf("CancelBatch of a completed batch = %v, want a BadRequest *APIError", err)
		}
	})
}

// A rerun finds the batch it created before a kill by its metadata, among
// more batches than one page lists.
func TestFindBatchByMetadata(t *testing.T) {
	h := mock.New(mock.Config{APIKey: batchKey})
	c := batchClient(t, h, false)
	file := input(t, 2, nil)
	f, err := c.UploadFile(t.Context(), "in.jsonl", bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for i := range 250 {
		b, err := c.CreateBatch(t.Context(), f.ID, map[string]string{"llmbatch_job": "j", "llmbatch_shard": strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[strconv.Itoa(i)] = b.ID
	}
	before := h.Stats().Requests
	var listed []string
	if err := c.ListBatches(t.Context(), func(b llm.Batch) bool { listed = append(listed, b.Metadata["llmbatch_shard"]); return true }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 250 || listed[0] != "249" || listed[249] != "0" || h.Stats().Requests-before != 3 {
		t.Errorf("ListBatches listed %d batches (first %s) in %d requests; want 250, newest first, in 3 pages",
			len(listed), listed[0], h.Stats().Requests-before)
	}
	for _, shard := range []string{"0", "7", "249"} {
		b, ok, err := c.FindBatch(t.Context(), map[string]string{"llmbatch_job": "j", "llmbatch_shard": shard})
		if err != nil || !ok || b.ID != ids[shard] {
			t.Errorf("FindBatch(shard %s) = %s, %v, %v; want %s", shard, b.ID, ok, err, ids[shard])
		}
	}
	if _, ok, err := c.FindBatch(t.Context(), map[string]string{"llmbatch_job": "other"}); ok || err != nil {
		t.Errorf("FindBatch(another job) = %v, %v; want not found", ok, err)
	}
}

// The request and byte limits are refused at upload with an error a
// sharder can act on: too large.
func TestUploadLimits(t *testing.T) {
	h := mock.New(mock.Config{APIKey: batchKey, Batch: mock.BatchConfig{MaxRequests: 10, MaxBytes: 4000}})
	c := batchClient(t, h, false)
	upload := func(file []byte) error {
		_, err := c.UploadFile(t.Context(), "in.jsonl", bytes.NewReader(file), int64(len(file)))
		return err
	}
	if err := upload(input(t, 10, nil)); err != nil {
		t.Fatalf("10 lines, at the limit: %v", err)
	}
	tests := []struct {
		name   string
		file   []byte
		status int
		kind   llm.Kind
		code   string
	}{
		{"11 lines", input(t, 11, nil), 400, llm.TooLarge, "too_many_requests"},
		{"over the bytes", append(input(t, 10, nil), bytes.Repeat([]byte(" "), 4000)...), 413, llm.TooLarge, "file_too_large"},
		{"far over the bytes", bytes.Repeat([]byte("x"), 2<<20), 413, llm.TooLarge, "file_too_large"},
		{"a custom_id twice", append(input(t, 2, nil), input(t, 1, nil)...), 400, llm.BadRequest, "invalid_request"},
		{"not JSON lines", []byte("hello\n"), 400, llm.BadRequest, "invalid_request"},
	}
	for _, tt := range tests {
		err := upload(tt.file)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Status != tt.status || ae.Kind != tt.kind || ae.Code != tt.code {
			t.Errorf("upload of %s = %v, want HTTP %d %v (%s)", tt.name, err, tt.status, tt.kind, tt.code)
		}
	}
	if s := h.BatchStats(); s.Files != 1 {
		t.Errorf("BatchStats().Files = %d, want 1: refused uploads are not kept", s.Files)
	}
}

// With a wrong key every call is refused as Auth, and no error shows the key.
func TestBatchWrongKey(t *testing.T) {
	h := mock.New(mock.Config{APIKey: "sk-the-right-one-0000000000"})
	c := batchClient(t, h, false)
	file := input(t, 1, nil)
	_, err1 := c.UploadFile(t.Context(), "in.jsonl", bytes.NewReader(file), int64(len(file)))
	_, err2 := c.CreateBatch(t.Context(), "file-mock-1", nil)
	err3 := c.ListBatches(t.Context(), func(llm.Batch) bool { return true })
	_, err4 := c.FileContent(t.Context(), "file-mock-1")
	for i, err := range []error{err1, err2, err3, err4} {
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Kind != llm.Auth {
			t.Errorf("call %d with a wrong key = %v, want an Auth *APIError", i+1, err)
		}
		if err != nil && bytes.Contains([]byte(err.Error()), []byte(batchKey)) {
			t.Errorf("call %d: error %q shows the key", i+1, err)
		}
	}
}
