package mock

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/llmbatch/llmbatch/llm"
)

// OpenAI's bounds on a batch's metadata.
const (
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

// createBatch answers POST /v1/batches: {"input_file_id", "endpoint":
// "/v1/chat/completions", "completion_window": "24h", "metadata"}.
func (h *Handler) createBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	buf := getBuf()
	defer putBuf(buf)
	status, bad := readBody(w, r, buf)
	if status == 0 && json.Unmarshal(buf.Bytes(), &req) != nil {
		status, bad = http.StatusBadRequest, invalid("", "We could not parse the JSON body of your request.")
	}
	if status == 0 {
		bad = checkBatchRequest(req.Endpoint, req.CompletionWindow, req.Metadata)
	}
	s := &h.batches
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[req.InputFileID]
	switch {
	case status != 0:
	case bad.Message != "":
		status = http.StatusBadRequest
	case f == nil:
		status, bad = http.StatusBadRequest, invalid("input_file_id", "No file found with id '%s'.", req.InputFileID)
	case f.obj.Purpose != "batch":
		status, bad = http.StatusBadRequest, invalid("input_file_id", "The file '%s' has purpose '%s', not 'batch'.", req.InputFileID, f.obj.Purpose)
	}
	if status != 0 {
		h.badRequests.Add(1)
		writeError(w, status, bad)
		return
	}
	j := s.addJob(h, f, req.Endpoint, req.CompletionWindow, req.Metadata)
	writeJSON(w, http.StatusOK, s.view(h, j, j.created))
}

// checkBatchRequest checks the fields of a create other than the file.
func checkBatchRequest(endpoint, window string, metadata map[string]string) apiError {
	switch {
	case endpoint != llm.BatchEndpoint:
		return invalid("endpoint", "Invalid endpoint %q: this server batches only %s.", endpoint, llm.BatchEndpoint)
	case window != llm.BatchWindow:
		return invalid("completion_window", "Invalid completion_window %q: only %s is supported.", window, llm.BatchWindow)
	case len(metadata) > maxMetadataPairs:
		return invalid("metadata", "Invalid metadata: at most %d pairs, not %d.", maxMetadataPairs, len(metadata))
	}
	for k, v := range metadata {
		if utf8.RuneCountInString(k) > maxMetadataKey || utf8.RuneCountInString(v) > maxMetadataValue {
			return invalid("metadata", "Invalid metadata: keys hold at most %d characters, values %d.", maxMetadataKey, maxMetadataValue)
		}
	}
	return apiError{}
}

// addJob creates a batch of f's lines. The caller holds s.mu.
func (s *batchStore) addJob(h *Handler, f *storedFile, endpoint, window string, metadata map[string]string) *batchJob {
	if s.jobs == nil {
		s.jobs = make(map[string]*batchJob)
	}
	s.nJb++
	now := s.clock()
	cfg := h.cfg.Batch.withDefaults()
	obj := llm.Batch{ID: "batch_mock_" + strconv.Itoa(s.nJb), Object: "batch", Endpoint: endpoint,
		InputFileID: f.obj.ID, CompletionWindow: window, CreatedAt: now.Unix(),
		ExpiresAt: now.Add(cfg.Expire).Unix(), Metadata: metadata}
	j := newJob(s.nJb, obj, f.lines, cfg, h.cfg.Seed, now)
	s.jobs[obj.ID] = j
	s.order = append(s.order, j)
	s.stats.Batches++
	return j
}

// job returns the batch r names, or answers 404 and returns nil. The
// caller holds s.mu.
func (h *Handler) job(w http.ResponseWriter, r *http.Request) *batchJob {
	id := r.PathValue("id")
	j := h.batches.jobs[id]
	if j == nil {
		h.badRequests.Add(1)
		writeError(w, http.StatusNotFound, notFound("batch", id))
	}
	return j
}

// getBatch answers GET /v1/batches/{id}.
func (h *Handler) getBatch(w http.ResponseWriter, r *http.Request) {
	s := &h.batches
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := h.job(w, r); j != nil {
		writeJSON(w, http.StatusOK, s.view(h, j, s.clock()))
	}
}

// cancelBatch answers POST /v1/batches/{id}/cancel. A batch already
// cancelling or cancelled is answered as it is; one otherwise done gets 400.
func (h *Handler) cancelBatch(w http.ResponseWriter, r *http.Request) {
	s := &h.batches
	s.mu.Lock()
	defer s.mu.Unlock()
	j := h.job(w, r)
	if j == nil {
		return
	}
	now := s.clock()
	switch status, _ := j.state(now); {
	case status == llm.BatchCancelling || status == llm.BatchCancelled:
	case status.Done():
		h.badRequests.Add(1)
		writeError(w, http.StatusBadRequest, invalid("", "Cannot cancel a batch with status '%s'.", status))
		return
	default:
		j.cancelAt = now
	}
	writeJSON(w, http.StatusOK, s.view(h, j, now))
}

// listBatches answers GET /v1/batches?limit=&after=: the batches, newest
// first, limit (1 to 100, default 20) at a time, after the batch named by
// after.
func (h *Handler) listBatches(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(cmp.Or(r.URL.Query().Get("limit"), "20"))
	if err != nil || limit < 1 || limit > 100 {
		h.badRequests.Add(1)
		writeError(w, http.StatusBadRequest, invalid("limit", "Invalid limit %q: an integer from 1 to 100.", r.URL.Query().Get("limit")))
		return
	}
	s := &h.batches
	s.mu.Lock()
	defer s.mu.Unlock()
	newest := slices.Clone(s.order)
	slices.Reverse(newest)
	if after := r.URL.Query().Get("after"); after != "" {
		i := slices.IndexFunc(newest, func(j *batchJob) bool { return j.obj.ID == after })
		if i < 0 {
			h.badRequests.Add(1)
			writeError(w, http.StatusBadRequest, invalid("after", "Invalid after: no batch has the id '%s'.", after))
			return
		}
		newest = newest[i+1:]
	}
	page := struct {
		Object  string      `json:"object"`
		Data    []llm.Batch `json:"data"`
		FirstID string      `json:"first_id,omitzero"`
		LastID  string      `json:"last_id,omitzero"`
		HasMore bool        `json:"has_more"`
	}{Object: "list", Data: []llm.Batch{}, HasMore: len(newest) > limit}
	now := s.clock()
	for _, j := range newest[:min(limit, len(newest))] {
		page.Data = append(page.Data, s.view(h, j, now))
	}
	if len(page.Data) > 0 {
		page.FirstID, page.LastID = page.Data[0].ID, page.Data[len(page.Data)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}
