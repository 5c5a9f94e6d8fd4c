package mock

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// BatchConfig sets the mock's Files and Batch APIs ([Config.Batch]); the
// zero value takes the documented defaults.
//
// A batch's life is decided by time alone, read when a request looks at
// it, so the mock runs no goroutine for it: it validates for Delay (and
// fails then if its file is not fit), is in_progress for Delay plus
// LineTime per line, its lines finishing one by one in a shuffled order,
// then finalizes for Delay and is completed. One not completed Expire
// after its creation is expired at that instant, keeping the lines
// finished by then; a cancelled one is cancelling for Delay, then
// cancelled, keeping the lines finished when the cancel came. The lines
// not kept appear in neither file, unless Unfinished.
type BatchConfig struct {
	Delay       time.Duration // each of validating, finalizing and cancelling, and the least of in_progress; default 1s
	LineTime    time.Duration // in_progress time per request line; default 0
	FailRate    float64       // share of lines given an injected 500/502/503 (one in four as an error object, no response), drawn from Config.Seed
	Expire      time.Duration // a batch not completed this long after its creation expires; default 24h
	MaxRequests int           // request lines per input file; default 50,000
	MaxBytes    int64         // bytes per input file; default 200 MiB
	// Unfinished puts the lines an expired or cancelled batch did not
	// finish into its error file, as error objects with the code
	// "batch_expired" or "batch_cancelled" (counted as failed), as OpenAI
	// documents, instead of leaving them out of both files.
	Unfinished bool
}

// The defaults of [BatchConfig], OpenAI's limits among them.
const (
	DefaultBatchDelay       = time.Second
	DefaultBatchExpire      = 24 * time.Hour
	DefaultBatchMaxRequests = 50_000
	DefaultBatchMaxBytes    = 200 << 20
)

func (c BatchConfig) withDefaults() BatchConfig {
	if c.Delay <= 0 {
		c.Delay = DefaultBatchDelay
	}
	if c.Expire <= 0 {
		c.Expire = DefaultBatchExpire
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = DefaultBatchMaxRequests
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultBatchMaxBytes
	}
	c.LineTime = max(c.LineTime, 0)
	c.FailRate = min(max(c.FailRate, 0), 1)
	return c
}

// batchOptionKeys lists the keys of [BatchConfig] that ParseOptions knows.
const batchOptionKeys = "batch_delay, batch_line, batch_fail, batch_expire, batch_max_requests, batch_max_bytes, batch_unfinished"

// set sets the field named by key from val and reports whether key is one
// of batchOptionKeys.
func (c *BatchConfig) set(key, val string) (bool, error) {
	var err error
	switch key {
	case "batch_delay":
		c.Delay, err = parseDuration(key, val)
	case "batch_line":
		c.LineTime, err = parseDuration(key, val)
	case "batch_fail":
		c.FailRate, err = parseFraction(key, val)
	case "batch_expire":
		c.Expire, err = parseDuration(key, val)
	case "batch_max_requests":
		c.MaxRequests, err = parseCount(key, val)
	case "batch_max_bytes":
		c.MaxBytes, err = strconv.ParseInt(val, 10, 64)
		if err != nil || c.MaxBytes < 0 {
			err = badValue(key, val, "a number of bytes >= 0")
		}
	case "batch_unfinished":
		switch val {
		case "omit":
			c.Unfinished = false
		case "errors":
			c.Unfinished = true
		default:
			err = badValue(key, val, "omit or errors")
		}
	default:
		return false, nil
	}
	return true, err
}

// BatchStats are the counters of the Files and Batch APIs so far.
type BatchStats struct {
	Files   int64 // input files accepted
	Batches int64 // batches created
	Lines   int64 // result lines written to output and error files
}

// BatchStats returns the counters of the Files and Batch APIs so far.
func (h *Handler) BatchStats() BatchStats {
	s := &h.batches
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// batchStore holds the files and batches of a [Handler]. Its zero value is
// ready; mu guards everything in it.
type batchStore struct {
	routes     sync.Once
	mux        *http.ServeMux
	mu         sync.Mutex
	now        func() time.Time // nil: time.Now; tests set it
	files      map[string]*storedFile
	jobs       map[string]*batchJob
	order      []*batchJob // oldest first
	nFile, nJb int
	stats      BatchStats
}

func (s *batchStore) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// serveBatchAPI serves r when it is a request of the Files or Batch API
// and reports whether it was one.
func (h *Handler) serveBatchAPI(w http.ResponseWriter, r *http.Request) bool {
	s := &h.batches
	s.routes.Do(func() { s.mux = h.batchRoutes() })
	if _, pattern := s.mux.Handler(r); pattern == "" {
		return false
	}
	s.mux.ServeHTTP(w, r)
	return true
}

func (h *Handler) batchRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, prefix := range []string{"/v1", ""} {
		mux.HandleFunc("POST "+prefix+"/files", h.uploadFile)
		mux.HandleFunc("GET "+prefix+"/files/{id}", h.getFile)
		mux.HandleFunc("DELETE "+prefix+"/files/{id}", h.deleteFile)
		mux.HandleFunc("GET "+prefix+"/files/{id}/content", h.fileContent)
		mux.HandleFunc("POST "+prefix+"/batches", h.createBatch)
		mux.HandleFunc("GET "+prefix+"/batches", h.listBatches)
		mux.HandleFunc("GET "+prefix+"/batches/{id}", h.getBatch)
		mux.HandleFunc("POST "+prefix+"/batches/{id}/cancel", h.cancelBatch)
	}
	return mux
}

// invalid returns the 400 a malformed Files or Batch API request gets.
func invalid(param, format string, args ...any) apiError {
	return apiError{Message: fmt.Sprintf(format, args...), Type: "invalid_request_error", Code: "invalid_request", Param: param}
}

// notFound returns the 404 for an unknown file or batch.
func notFound(what, id string) apiError {
	return apiError{Message: fmt.Sprintf("No %s found with id '%s'.", what, id), Type: "invalid_request_error", Code: "not_found"}
}
