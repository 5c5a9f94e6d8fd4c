package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// # The Files and Batch APIs
//
// The methods below speak OpenAI's /v1/files and /v1/batches, which
// DashScope, Moonshot, Groq and Together copy, on the client's base URL,
// with its HTTP client, timeouts and error classes; every error is an
// *APIError scrubbed of the key, or ctx's error. They use the limiter not
// at all (batch quotas are counted apart from the per-minute limits) and
// only the first of several keys: files and batches belong to a key's
// project, and a rotation could upload with one key and create with another.
//
// Reads (GetFile, GetBatch, ListBatches, FileContent), cancels and uploads
// are retried like chat requests; CreateBatch never is (see there).

// UploadFile uploads size bytes of content, a batch input file (JSONL of
// [BatchRequestLine]), under the file name name, with purpose "batch".
// content is read afresh from offset 0 for each attempt, so a *os.File or a
// *bytes.Reader may be given and nothing is copied into memory.
//
// Each attempt may take the client's Timeout plus a second per MiB of
// content, so that a file of 200 MB gets through a slow uplink.
//
// A retried upload whose first answer was lost leaves an unused file at the
// provider: harmless, since a file does nothing until a batch names it.
func (c *Client) UploadFile(ctx context.Context, name string, content io.ReaderAt, size int64) (FileObject, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", "batch") // a bytes.Buffer cannot fail
	if _, err := mw.CreateFormFile("file", name); err != nil {
		return FileObject{}, fmt.Errorf("llm: upload %s: %w", name, err)
	}
	head := bytes.Clone(buf.Bytes())
	buf.Reset()
	_ = mw.Close()
	tail := buf.Bytes()
	req := apiCall{method: http.MethodPost, path: "files", retry: true, extra: time.Duration(size>>20) * time.Second,
		contentType: mw.FormDataContentType(), size: int64(len(head)) + size + int64(len(tail)),
		body: func() io.Reader {
			return io.MultiReader(bytes.NewReader(head), io.NewSectionReader(content, 0, size), bytes.NewReader(tail))
		}}
	var f FileObject
	return f, c.call(ctx, req, &f)
}

// GetFile returns the file with the given id.
func (c *Client) GetFile(ctx context.Context, id string) (FileObject, error) {
	var f FileObject
	return f, c.call(ctx, apiCall{method: http.MethodGet, path: "files/" + url.PathEscape(id), retry: true}, &f)
}

// DeleteFile deletes the file with the given id. Deleting a batch's input
// does not stop the batch.
func (c *Client) DeleteFile(ctx context.Context, id string) error {
	return c.call(ctx, apiCall{method: http.MethodDelete, path: "files/" + url.PathEscape(id), retry: true}, nil)
}

// CreateBatch starts a batch of the chat completion requests in the
// uploaded file inputFileID, with window BatchWindow, tagged with metadata
// (at most 16 pairs; nil for none).
//
// It is sent once and never retried, whatever the failure: a create whose
// answer was lost (a reset, a timeout, a 502 from a proxy) may have created
// the batch, and a second create would run and bill every line twice.
// A caller that does not know whether its create happened finds the batch
// by its metadata instead (see [Client.FindBatch]).
func (c *Client) CreateBatch(ctx context.Context, inputFileID string, metadata map[string]string) (Batch, error) {
	body, err := json.Marshal(struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata,omitempty"`
	}{inputFileID, BatchEndpoint, BatchWindow, metadata})
	if err != nil {
		return Batch{}, fmt.Errorf("llm: create batch: %w", err)
	}
	var b Batch
	return b, c.call(ctx, jsonCall(http.MethodPost, "batches", body, false), &b)
}

// GetBatch returns the batch with the given id as it is now.
func (c *Client) GetBatch(ctx context.Context, id string) (Batch, error) {
	var b Batch
	return b, c.call(ctx, apiCall{method: http.MethodGet, path: "batches/" + url.PathEscape(id), retry: true}, &b)
}

// CancelBatch asks the provider to cancel the batch with the given id and
// returns it, most often cancelling: the lines finished so far stay in its
// output. Cancelling again is harmless, so it is retried like a read.
func (c *Client) CancelBatch(ctx context.Context, id string) (Batch, error) {
	var b Batch
	return b, c.call(ctx, jsonCall(http.MethodPost, "batches/"+url.PathEscape(id)+"/cancel", nil, true), &b)
}

// batchPage is one page of GET /v1/batches.
type batchPage struct {
	Data    []Batch `json:"data"`
	HasMore bool    `json:"has_more"`
	LastID  string  `json:"last_id"`
}

// ListBatches calls fn with each of the key's batches, newest first, page
// after page, until fn returns false or the list ends.
func (c *Client) ListBatches(ctx context.Context, fn func(Batch) bool) error {
	after := ""
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page batchPage
		if err := c.call(ctx, apiCall{method: http.MethodGet, path: "batches", query: q, retry: true}, &page); err != nil {
			return err
		}
		for _, b := range page.Data {
			if !fn(b) {
				return nil
			}
		}
		next := page.LastID
		if next == "" && len(page.Data) > 0 {
			next = page.Data[len(page.Data)-1].ID
		}
		if !page.HasMore || next == "" || next == after {
			return nil // the end, or a cursor that does not move: no endless loop
		}
		after = next
	}
}

// FindBatch returns the newest batch whose metadata holds every pair of
// want, and whether there is one. It is how a run that was killed between
// a create and its record finds the batch it created.
func (c *Client) FindBatch(ctx context.Context, want map[string]string) (Batch, bool, error) {
	var found Batch
	ok := false
	err := c.ListBatches(ctx, func(b Batch) bool {
		for k, v := range want {
			if got, has := b.Metadata[k]; !has || got != v {
				return true
			}
		}
		found, ok = b, true
		return false
	})
	return found, ok, err
}

// FileContent returns the content of the file with the given id, read as
// it arrives: the caller reads it (with [ReadBatchResults] for a batch's
// output or error file) and must close it. The client's Timeout bounds the
// wait for the response's headers and then each read, not the whole
// download; a failed read returns an *APIError, Transient.
func (c *Client) FileContent(ctx context.Context, id string) (io.ReadCloser, error) {
	req := apiCall{method: http.MethodGet, path: "files/" + url.PathEscape(id) + "/content", retry: true}
	for n := 1; ; n++ {
		rc, err := c.stream(ctx, req)
		if err == nil {
			return rc, nil
		}
		if err = c.retryWait(ctx, req, n, err); err != nil {
			return nil, err
		}
	}
}

// apiCall is one Files or Batch API request.
type apiCall struct {
	method, path string
	query        url.Values
	body         func() io.Reader // a fresh body per attempt; nil for none
	size         int64            // the body's length
	contentType  string
	retry        bool          // may be sent again after a transient failure
	extra        time.Duration // added to the client's Timeout for each attempt
}

func jsonCall(method, path string, body []byte, retry bool) apiCall {
	return apiCall{method: method, path: path, retry: retry, contentType: "application/json", size: int64(len(body)),
		body: func() io.Reader { return bytes.NewReader(body) }}
}

// call makes req until it succeeds or fails for good, and decodes the
// answer into out (unless out is nil).
func (c *Client) call(ctx context.Context, req apiCall, out any) error {
	for n := 1; ; n++ {
		raw, err := c.exchange(ctx, req)
		if err == nil {
			if out == nil || json.Unmarshal(raw, out) == nil {
				return nil
			}
			err = &APIError{Status: http.StatusOK, Kind: Transient, Message: "response body is not the JSON expected"}
		}
		if err = c.retryWait(ctx, req, n, err); err != nil {
			return err
		}
	}
}

// retryWait returns nil after waiting when attempt n of req, which failed
// with err, may be made again, and err otherwise.
func (c *Client) retryWait(ctx context.Context, req apiCall, n int, err error) error {
	var ae *APIError
	if !req.retry || n >= c.cfg.MaxAttempts || !errors.As(err, &ae) || !ae.Kind.Retryable() {
		return err
	}
	d := c.delay(n, ae)
	c.log.Debug("retry", "request", req.method+" "+req.path, "attempt", n, "status", ae.Status,
		"kind", ae.Kind.String(), "delay", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exchange makes one attempt of req under the client's Timeout (plus
// req.extra) and returns the 2xx body.
func (c *Client) exchange(ctx context.Context, req apiCall) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout+req.extra)
	defer cancel()
	res, err := c.http.Do(c.apiRequest(actx, req))
	if err != nil {
		return nil, c.scrub(transportError(ctx, actx, err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, c.cfg.MaxBodyBytes+1))
	if err != nil {
		return nil, c.scrub(transportError(ctx, actx, err))
	}
	if int64(len(raw)) > c.cfg.MaxBodyBytes {
		raw = raw[:c.cfg.MaxBodyBytes]
		if ok(res.StatusCode) {
			return nil, &APIError{Status: res.StatusCode, Kind: Transient,
				Message: "response body longer than " + strconv.FormatInt(c.cfg.MaxBodyBytes, 10) + " bytes"}
		}
	}
	if !ok(res.StatusCode) {
		return nil, c.apiError(res, raw)
	}
	return raw, nil
}

func ok(status int) bool { return status >= 200 && status <= 299 }

// apiError classifies a non-2xx answer as a chat answer is classified.
func (c *Client) apiError(res *http.Response, raw []byte) error {
	ae := classify(res.StatusCode, res.Header, raw, time.Now())
	ae.header = res.Header
	return c.scrub(ae)
}

// apiRequest builds the HTTP request of req. The URL is the base URL's
// (checked by New), so building it cannot fail.
func (c *Client) apiRequest(ctx context.Context, req apiCall) *http.Request {
	u, _ := url.Parse(strings.TrimRight(c.cfg.BaseURL, "/"))
	u = u.JoinPath(req.path)
	if len(req.query) > 0 {
		q := u.Query() // keep the base URL's own, such as Azure's ?api-version=
		for k, v := range req.query {
			q[k] = v
		}
		u.RawQuery = q.Encode()
	}
	var body io.Reader
	if req.body != nil {
		body = req.body()
	}
	hr, _ := http.NewRequestWithContext(ctx, req.method, u.String(), body)
	if req.body != nil {
		hr.ContentLength = req.size
		hr.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(req.body()), nil }
		hr.Header.Set("Content-Type", req.contentType)
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.cfg.UserAgent)
	if key := c.batchKey(); key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	return hr
}

// batchKey is the one key of the Files and Batch API calls (see the top
// of this file): the first of several, or the only one.
func (c *Client) batchKey() string {
	if len(c.cfg.APIKeys) > 0 {
		return c.cfg.APIKeys[0]
	}
	return c.cfg.APIKey
}

// stream makes one attempt of req and returns its 2xx body unread. The
// Timeout bounds the wait for the headers, then each read of the body.
func (c *Client) stream(ctx context.Context, req apiCall) (io.ReadCloser, error) {
	actx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(c.cfg.Timeout, cancel)
	res, err := c.http.Do(c.apiRequest(actx, req))
	if err != nil {
		t.Stop()
		cancel()
		return nil, c.scrub(transportError(ctx, actx, err))
	}
	if !ok(res.StatusCode) {
		defer cancel()
		defer res.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(res.Body, c.cfg.MaxBodyBytes)) // a cut body only loses the message's tail
		t.Stop()
		return nil, c.apiError(res, raw)
	}
	t.Stop() // a timer that fired has cancelled actx: the first read says so
	return &idleBody{c: c, ctx: ctx, actx: actx, body: res.Body, timer: t, cancel: cancel, idle: c.cfg.Timeout}, nil
}

// idleBody is a response body whose reads may each take up to idle, so
// that a stalled download ends while a long one goes on. The time between
// reads, the caller's, does not count.
type idleBody struct {
	c         *Client
	ctx, actx context.Context
	body      io.ReadCloser
	timer     *time.Timer // cancels actx when a read takes longer than idle
	cancel    context.CancelFunc
	idle      time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.actx.Err() != nil {
		return 0, b.c.scrub(transportError(b.ctx, b.actx, b.actx.Err()))
	}
	b.timer.Reset(b.idle)
	n, err := b.body.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF {
		err = b.c.scrub(transportError(b.ctx, b.actx, err))
	}
	return n, err
}

// Close ends the download and frees its connection.
func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel()
	return err
}
