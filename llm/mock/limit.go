package mock

import (
	"net/http"
	"strconv"
	"time"
)

// refusal says why admit turned a request away.
type refusal int

const (
	admitted      refusal = iota
	quotaSpent            // Quota successful answers were given
	requestsLimit         // RPM requests were admitted in this window
	tokensLimit           // admitting the request would pass TPM in this window
)

// verdict is the outcome of admit for one request.
type verdict struct {
	refusal refusal
	fault   int           // 0, or the 5xx status to answer with after the delay
	delay   time.Duration // Latency plus this request's jitter
	reset   time.Duration // until the current window ends
	reqs    int           // requests admitted in the window, this one included
	toks    int           // tokens admitted in the window, this one included
	quota   bool          // whether a quota grant was taken (give it back if unused)
}

// faults are the statuses FailRate picks from, uniformly.
var faults = [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}

// admit decides whether a request costing tokens is served now. Windows are
// fixed: window k is [start+k*W, start+(k+1)*W). Refused requests do not count
// against the window; admitted ones count whatever their fate. A request
// costing more than TPM on its own is admitted into an empty window, so that
// it cannot be refused for ever.
func (h *Handler) admit(tokens int) verdict {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()

	elapsed := now.Sub(h.start)
	k := int64(elapsed / h.cfg.Window)
	if k != h.window {
		h.window, h.reqs, h.toks = k, 0, 0
	}
	v := verdict{reset: time.Duration(k+1)*h.cfg.Window - elapsed}
	switch {
	case h.cfg.Quota > 0 && h.granted >= h.cfg.Quota:
		v.refusal = quotaSpent
	case h.cfg.RPM > 0 && h.reqs >= h.cfg.RPM:
		v.refusal = requestsLimit
	case h.cfg.TPM > 0 && h.toks > 0 && h.toks+tokens > h.cfg.TPM:
		v.refusal = tokensLimit
	}
	if v.refusal != admitted {
		v.reqs, v.toks = h.reqs, h.toks
		return v
	}
	h.reqs++
	h.toks += tokens
	v.reqs, v.toks = h.reqs, h.toks

	v.delay = h.cfg.Latency
	if h.cfg.Jitter > 0 {
		v.delay += time.Duration(h.rng.Int64N(int64(h.cfg.Jitter) + 1))
	}
	if h.cfg.FailRate > 0 && h.rng.Float64() < h.cfg.FailRate {
		v.fault = faults[h.rng.IntN(len(faults))]
	} else if h.cfg.Quota > 0 {
		h.granted++
		v.quota = true
	}
	return v
}

// release gives back the quota grant of a request that was admitted but not
// answered (its client went away).
func (h *Handler) release(v verdict) {
	if !v.quota {
		return
	}
	h.mu.Lock()
	h.granted--
	h.mu.Unlock()
}

// setLimitHeaders sets the x-ratelimit-* headers OpenAI sends, for each limit
// that is configured.
func (h *Handler) setLimitHeaders(hdr http.Header, v verdict) {
	if h.cfg.NoLimitHeaders {
		return
	}
	reset := formatReset(v.reset)
	if h.cfg.RPM > 0 {
		hdr["X-Ratelimit-Limit-Requests"] = []string{strconv.Itoa(h.cfg.RPM)}
		hdr["X-Ratelimit-Remaining-Requests"] = []string{strconv.Itoa(max(h.cfg.RPM-v.reqs, 0))}
		hdr["X-Ratelimit-Reset-Requests"] = []string{reset}
	}
	if h.cfg.TPM > 0 {
		hdr["X-Ratelimit-Limit-Tokens"] = []string{strconv.Itoa(h.cfg.TPM)}
		hdr["X-Ratelimit-Remaining-Tokens"] = []string{strconv.Itoa(max(h.cfg.TPM-v.toks, 0))}
		hdr["X-Ratelimit-Reset-Tokens"] = []string{reset}
	}
}

// setRetryHeaders sets the hints of a 429: Retry-After in whole seconds,
// rounded up and at least 1, and with ms retry-after-ms, both until the
// window ends.
func setRetryHeaders(hdr http.Header, d time.Duration, withMs bool) {
	hdr["Retry-After"] = []string{strconv.FormatInt(max(ceilDiv(d, time.Second), 1), 10)}
	if withMs {
		hdr["Retry-After-Ms"] = []string{strconv.FormatInt(max(ceilDiv(d, time.Millisecond), 1), 10)}
	}
}

// formatReset writes d the way OpenAI's x-ratelimit-reset-* headers do, as a
// Go duration ("1.2s", "345ms", "6m0s"), rounded up to the millisecond so that
// a client waiting for it never comes back early.
func formatReset(d time.Duration) string {
	return (time.Duration(ceilDiv(d, time.Millisecond)) * time.Millisecond).String()
}

// ceilDiv returns d/unit rounded up, for d >= 0.
func ceilDiv(d, unit time.Duration) int64 {
	return int64((max(d, 0) + unit - 1) / unit)
}

// sleep waits for d or until done is closed, and reports whether d passed.
func sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
