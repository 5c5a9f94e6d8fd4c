package llm

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryHint returns how long the server asked us to wait, or 0 when it gave
// no usable hint. The order is retry-after-ms, Retry-After (seconds or an
// HTTP-date), x-ratelimit-reset-requests/-tokens, then body fields. Dates are
// measured against the response's Date header when it has one, so a skewed
// local clock cannot make the client retry early.
func retryHint(h http.Header, body []byte, now time.Time) time.Duration {
	serverNow := now
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		serverNow = d
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if d, ok := parseSecondsOrDate(v, serverNow); ok {
			return d
		}
	}
	var best time.Duration
	for _, k := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens", "x-ratelimit-reset"} {
		if d, ok := parseReset(h.Get(k), serverNow); ok && d > best {
			best = d
		}
	}
	if best > 0 {
		return best
	}
	return bodyHint(body)
}

func parseSecondsOrDate(v string, serverNow time.Time) (time.Duration, bool) {
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || math.IsNaN(s) || s > 1e7 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(serverNow); d > 0 {
			return d, true
		}
	}
	return 0, false
}

// parseReset reads an x-ratelimit-reset-* value: a Go-style duration ("1s",
// "6m0s", "20ms"), plain seconds, a Unix timestamp, or an RFC 3339 time.
func parseReset(v string, serverNow time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d, d > 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 1e9 { // a Unix time, in seconds or milliseconds
			if s > 1e12 {
				s /= 1000
			}
			d := time.Unix(0, int64(s*1e9)).Sub(serverNow)
			return d, d > 0
		}
		return time.Duration(s * float64(time.Second)), s > 0
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		d := t.Sub(serverNow)
		return d, d > 0
	}
	return 0, false
}

// bodyHint reads hints some providers put in the error body, such as
// Doubao's data.retry_after_seconds.
func bodyHint(body []byte) time.Duration {
	if len(body) == 0 || body[0] != '{' {
		return 0
	}
	var b struct {
		RetryAfter  *float64 `json:"retry_after"`
		RetryAfterS *float64 `json:"retry_after_seconds"`
		Data        struct {
			RetryAfterS *float64 `json:"retry_after_seconds"`
		} `json:"data"`
		Error struct {
			RetryAfterS *float64 `json:"retry_after_seconds"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return 0
	}
	for _, p := range []*float64{b.Data.RetryAfterS, b.Error.RetryAfterS, b.RetryAfterS, b.RetryAfter} {
		if p != nil && *p > 0 && *p < 1e7 {
			return time.Duration(*p * float64(time.Second))
		}
	}
	return 0
}
