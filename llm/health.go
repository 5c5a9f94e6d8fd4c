package llm

import (
	"sync"
	"time"
)

// breakFailures is how many transient failures in a row, at least, stop a
// run (with Config.BreakAfter).
const breakFailures = 5

// health is the client's circuit breaker, and its memory of when a request
// last got through. Safe for concurrent use.
type health struct {
	mu           sync.Mutex
	failingSince time.Time // first transient failure since the last answer; zero when the last attempt got one
	failures     int       // transient failures since the last answer
	lastOK       time.Time // when a request last succeeded
}

// record notes whether an attempt got an answer of the server's own (a
// success or a failure that was not transient: ok) or failed transiently;
// success tells a request that got through.
func (h *health) record(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case ok:
		h.failingSince, h.failures = time.Time{}, 0
	case h.failingSince.IsZero():
		h.failingSince, h.failures = time.Now(), 1
	default:
		h.failures++
	}
}

// succeeded notes a request that got through.
func (h *health) succeeded() {
	h.mu.Lock()
	h.lastOK = time.Now()
	h.mu.Unlock()
}

// gotThrough reports whether a request has succeeded since t.
func (h *health) gotThrough(t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.lastOK.Before(t)
}

// broken returns an *APIError of kind Unavailable when every attempt has
// failed transiently for longer than after (0: never).
func (h *health) broken(after time.Duration) error {
	if after <= 0 {
		return nil
	}
	h.mu.Lock()
	since, failures := h.failingSince, h.failures
	h.mu.Unlock()
	// Both a span and a count: one slow request that times out after
	// minutes must not stop a run whose other requests are fine.
	if since.IsZero() || time.Since(since) < after || failures < breakFailures {
		return nil
	}
	return &APIError{Kind: Unavailable, Message: "every attempt has failed for " +
		time.Since(since).Round(time.Second).String() + " (the server seems down)"}
}
