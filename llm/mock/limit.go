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
	reqs    int           // requests admitted in the window, this one included (bucket: the limit less what is left)
	toks    int           // tokens admitted in the window, this one included (bucket: the limit less what is left)
	quota   bool          // whether a quota grant was taken (give it back if unused)

	reqReset, tokReset time.Duration // until the window ends (bucket: until it is full again)
	retry              time.Duration // for a refusal: until the request could be admitted
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

	var v verdict
	if h.cfg.Bucket {
		v = h.takeBuckets(now, tokens)
	} else {
		v = h.takeWindow(now, tokens)
	}
	if v.refusal != admitted {
		return v
	}

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

// takeWindow admits a request into the fixed window of now, or says why not.
func (h *Handler) takeWindow(now time.Time, tokens int) verdict {
	elapsed := now.Sub(h.start)
	k := int64(elapsed / h.cfg.Window)
	if k != h.window {
		h.window, h.reqs, h.toks = k, 0, 0
	}
	end := time.Duration(k+1)*h.cfg.Window - elapsed
	v := verdict{reqReset: end, tokReset: end, retry: end}
	switch {
	case h.cfg.Quota > 0 && h.granted >= h.cfg.Quota:
		v.refusal = quotaSpent
	case h.cfg.RPM > 0 && h.reqs >= h.cfg.RPM:
		v.refusal = requestsLimit
	case h.cfg.TPM > 0 && h.toks > 0 && h.toks+tokens > h.cfg.TPM:
		v.refusal = tokensLimit
	}
	if v.refusal == admitted {
		h.reqs++
		h.toks += tokens
	}
	v.reqs, v.toks = h.reqs, h.toks
	return v
}

// takeBuckets admits a request from buckets that hold RPM requests and TPM
// tokens and refill continuously, a whole one per Window, as OpenAI's limits
// do, or says why not. A request costing more than TPM goes from a full
// bucket.
func (h *Handler) takeBuckets(now time.Time, tokens int) verdict {
	if h.filled.IsZero() {
		h.reqLevel, h.tokLevel = float64(h.cfg.RPM), float64(h.cfg.TPM)
	} else {
		part := float64(now.Sub(h.filled)) / float64(h.cfg.Window)
		h.reqLevel = min(float64(h.cfg.RPM), h.reqLevel+part*float64(h.cfg.RPM))
		h.tokLevel = min(float64(h.cfg.TPM), h.tokLevel+part*float64(h.cfg.TPM))
	}
	h.filled = now
	need := min(float64(tokens), float64(h.cfg.TPM))
	var v verdict
	switch {
	case h.cfg.Quota > 0 && h.granted >= h.cfg.Quota:
		v.refusal = quotaSpent
	case h.cfg.RPM > 0 && h.reqLevel < 1:
		v.refusal = requestsLimit
		v.retry = refill(1-h.reqLevel, h.cfg.RPM, h.cfg.Window)
	case h.cfg.TPM > 0 && h.tokLevel < need:
		v.refusal = tokensLimit
		v.retry = refill(need-h.tokLevel, h.cfg.TPM, h.cfg.Window)
	}
	if v.refusal == admitted {
		if h.cfg.RPM > 0 {
			h.reqLevel--
		}
		if h.cfg.TPM > 0 {
			h.tokLevel = max(h.tokLevel-float64(tokens), 0)
		}
	}
	v.reqs, v.toks = h.cfg.RPM-int(h.reqLevel), h.cfg.TPM-int(h.tokLevel)
	v.reqReset = refill(float64(h.cfg.RPM)-h.reqLevel, h.cfg.RPM, h.cfg.Window)
	v.tokReset = refill(float64(h.cfg.TPM)-h.tokLevel, h.cfg.TPM, h.cfg.Window)
	return v
}

// refill is how long a bucket refilling limit per window takes to gain n.
func refill(n float64, limit int, window time.Duration) time.Duration {
	if limit <= 0 || n <= 0 {
		return 0
	}
	return time.Duration(n / float64(limit) * float64(window))
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
	if h.cfg.RPM > 0 {
		hdr["X-Ratelimit-Limit-Requests"] = []string{strconv.Itoa(h.cfg.RPM)}
		hdr["X-Ratelimit-Remaining-Requests"] = []string{strconv.Itoa(max(h.cfg.RPM-v.reqs, 0))}
		hdr["X-Ratelimit-Reset-Requests"] = []string{formatReset(v.reqReset)}
	}
	if h.cfg.TPM > 0 {
		hdr["X-Ratelimit-Limit-Tokens"] = []string{strconv.Itoa(h.cfg.TPM)}
		hdr["X-Ratelimit-Remaining-Tokens"] = []string{strconv.Itoa(max(h.cfg.TPM-v.toks, 0))}
		hdr["X-Ratelimit-Reset-Tokens"] = []string{formatReset(v.tokReset)}
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
