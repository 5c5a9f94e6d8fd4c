package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/llmbatch/llmbatch/llm"
)

// storedFile is an uploaded input file or a batch's output or error file.
type storedFile struct {
	obj   llm.FileObject
	data  []byte
	lines []fileLine // an input file's request lines, parsed at upload
}

// fileLine is one request line of an input file; body points into the
// file's data.
type fileLine struct {
	customID, url string
	body          []byte
}

// uploadFile answers POST /v1/files: a multipart form with purpose=batch
// and a JSONL file of request lines, each with a unique custom_id. A file
// over MaxBytes gets 413, one over MaxRequests lines or with a bad line 400.
func (h *Handler) uploadFile(w http.ResponseWriter, r *http.Request) {
	cfg := h.cfg.Batch.withDefaults()
	// The form's own fields and boundaries need some room beyond the file.
	r.Body = http.MaxBytesReader(w, r.Body, cfg.MaxBytes+1<<20)
	u, status, bad := readUpload(r, cfg.MaxBytes)
	if status == 0 && u.purpose != "batch" {
		status, bad = http.StatusBadRequest, invalid("purpose", "Invalid purpose %q: this server takes files with purpose 'batch'.", u.purpose)
	}
	var lines []fileLine
	if status == 0 {
		lines, bad = parseInput(u.data, cfg.MaxRequests)
		if bad.Message != "" {
			status = http.StatusBadRequest
		}
	}
	if status != 0 {
		h.badRequests.Add(1)
		writeError(w, status, bad)
		return
	}
	s := &h.batches
	s.mu.Lock()
	f := s.addFile(u.name, "batch", u.data)
	f.lines = lines
	s.stats.Files++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, f.obj)
}

// upload is what an upload form holds.
type upload struct {
	name, purpose string
	data          []byte
}

// readUpload reads the parts of an upload form.
func readUpload(r *http.Request, maxBytes int64) (upload, int, apiError) {
	var u upload
	mr, err := r.MultipartReader()
	if err != nil {
		return u, http.StatusBadRequest, invalid("", "The body must be multipart/form-data with the fields 'purpose' and 'file'.")
	}
	gotFile := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return readFailure(u, err, maxBytes)
		}
		switch p.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(p, 64))
			if err != nil {
				return readFailure(u, err, maxBytes)
			}
			u.purpose = string(b)
		case "file":
			u.name, gotFile = p.FileName(), true
			if u.data, err = io.ReadAll(io.LimitReader(p, maxBytes+1)); err != nil {
				return readFailure(u, err, maxBytes)
			}
			if int64(len(u.data)) > maxBytes {
				return u, http.StatusRequestEntityTooLarge, tooLarge(maxBytes)
			}
		}
	}
	if !gotFile {
		return u, http.StatusBadRequest, invalid("file", "Missing required parameter: 'file'.")
	}
	return u, 0, apiError{}
}

func readFailure(u upload, err error, maxBytes int64) (upload, int, apiError) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return u, http.StatusRequestEntityTooLarge, tooLarge(maxBytes)
	}
	return u, http.StatusBadRequest, invalid("", "We could not read the multipart body of your request.")
}

func tooLarge(maxBytes int64) apiError {
	return apiError{Message: fmt.Sprintf("File too large: a batch input file may hold at most %d bytes.", maxBytes),
		Type: "invalid_request_error", Code: "file_too_large", Param: "file"}
}

// parseInput checks an input file: at most maxLines lines, each a request
// line {"custom_id","method":"POST","url","body":{...}} with a custom_id
// no other line has. Blank lines are skipped. The first fault found is
// returned, with its line number.
func parseInput(data []byte, maxLines int) ([]fileLine, apiError) {
	var lines []fileLine
	seen := make(map[string]int)
	for n, rest := 1, data; len(rest) > 0; n++ {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		rest = after
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if len(lines) == maxLines {
			return nil, apiError{Message: fmt.Sprintf("File too large for a batch: it holds more than %d requests, the limit.", maxLines),
				Type: "invalid_request_error", Code: "too_many_requests", Param: "file"}
		}
		fl, bad := parseLine(line, n)
		if bad.Message != "" {
			return nil, bad
		}
		if first, dup := seen[fl.customID]; dup {
			return nil, invalid("file", "Line %d: the custom_id %q is that of line %d; each request needs its own.", n, fl.customID, first)
		}
		seen[fl.customID] = n
		lines = append(lines, fl)
	}
	if len(lines) == 0 {
		return nil, invalid("file", "The file holds no requests.")
	}
	return lines, apiError{}
}

// parseLine checks line n of an input file.
func parseLine(line []byte, n int) (fileLine, apiError) {
	var rec struct {
		CustomID *string         `json:"custom_id"`
		Method   string          `json:"method"`
		URL      string          `json:"url"`
		Body     json.RawMessage `json:"body"`
	}
	switch {
	case json.Unmarshal(line, &rec) != nil:
		return fileLine{}, invalid("file", "Line %d is not a JSON object.", n)
	case rec.CustomID == nil || *rec.CustomID == "":
		return fileLine{}, invalid("file", "Line %d has no custom_id (a non-empty string).", n)
	case rec.Method != http.MethodPost:
		return fileLine{}, invalid("file", "Line %d: the method must be POST, not %q.", n, rec.Method)
	case rec.URL == "":
		return fileLine{}, invalid("file", "Line %d has no url.", n)
	case len(rec.Body) == 0 || rec.Body[0] != '{':
		return fileLine{}, invalid("file", "Line %d: the body must be a JSON object.", n)
	}
	return fileLine{customID: *rec.CustomID, url: rec.URL, body: rec.Body}, apiError{}
}

// addFile stores data as a new file. The caller holds s.mu.
func (s *batchStore) addFile(name, purpose string, data []byte) *storedFile {
	if s.files == nil {
		s.files = make(map[string]*storedFile)
	}
	s.nFile++
	f := &storedFile{data: data, obj: llm.FileObject{ID: "file-mock-" + strconv.Itoa(s.nFile), Object: "file",
		Bytes: int64(len(data)), CreatedAt: s.clock().Unix(), Filename: name, Purpose: purpose}}
	s.files[f.obj.ID] = f
	return f
}

// file returns the file r names, or answers 404 and returns nil.
func (h *Handler) file(w http.ResponseWriter, r *http.Request) *storedFile {
	id := r.PathValue("id")
	s := &h.batches
	s.mu.Lock()
	f := s.files[id]
	s.mu.Unlock()
	if f == nil {
		h.badRequests.Add(1)
		writeError(w, http.StatusNotFound, notFound("file", id))
	}
	return f
}

// getFile answers GET /v1/files/{id}.
func (h *Handler) getFile(w http.ResponseWriter, r *http.Request) {
	if f := h.file(w, r); f != nil {
		writeJSON(w, http.StatusOK, f.obj)
	}
}

// fileContent answers GET /v1/files/{id}/content with the file's bytes.
func (h *Handler) fileContent(w http.ResponseWriter, r *http.Request) {
	f := h.file(w, r)
	if f == nil {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.data) // the client's problem if it went away
}

// deleteFile answers DELETE /v1/files/{id}. A batch keeps the lines of a
// deleted input file.
func (h *Handler) deleteFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s := &h.batches
	s.mu.Lock()
	_, found := s.files[id]
	delete(s.files, id)
	s.mu.Unlock()
	if !found {
		h.badRequests.Add(1)
		writeError(w, http.StatusNotFound, notFound("file", id))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "file", true})
}
