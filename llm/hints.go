package llm

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxHint bounds the hints believed, in seconds (about 115 days); a larger
// number is a misreading (a timestamp taken for seconds, say).
const maxHint = 1e7

// retryHint returns how long the server asked us to wait, or 0 when it gave
// no usable hint. The order is retry-after-ms, Retry-After (seconds or an
// HTTP-date), x-ratelimit-reset-* (on a 429 only), then body fields; a value
// that cannot be read, or is not positive, passes to the next. Dates are
// measured against the response's Date header when it has one, so a skewed
// local clock cannot make the client retry early.
func retryHint(status int, h http.Header, body []byte, now time.Time) time.Duration {
	serverNow := now
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		serverNow = d
	}
	if d, ok := parseSeconds(h.Get("retry-after-ms"), time.Millisecond); ok {
		return d
	}
	if d, ok := parseSecondsOrDate(h.Get("Retry-After"), serverNow); ok {
		return d
	}
	// OpenAI sends x-ratelimit-reset-* with every response: they say when
	// the buckets are full again, which is advice to wait only after a 429.
	if status == http.StatusTooManyRequests {
		if d := resetHint(h, serverNow); d > 0 {
			return d
		}
	}
	return bodyHint(body)
}

// parseSeconds reads v as a positive number of units ("1.5" seconds,
// "250" ms).
func parseSeconds(v string, unit time.Duration) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, false
	}
	return hint(f, unit)
}

// hint turns f units into a duration when it is positive and believable.
func hint(f float64, unit time.Duration) (time.Duration, bool) {
	if !(f > 0) || f*float64(unit) > maxHint*float64(time.Second) { // !(f > 0) also catches NaN
		return 0, false
	}
	return time.Duration(math.Ceil(f * float64(unit))), true
}

func parseSecondsOrDate(v string, serverNow time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if d, ok := parseSeconds(v, time.Second); ok {
		return d, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return until(t, serverNow)
	}
	return 0, false
}

func until(t, serverNow time.Time) (time.Duration, bool) {
	d := t.Sub(serverNow)
	return d, d > 0 && d <= maxHint*time.Second
}

// resetHint reads the x-ratelimit-reset-requests and -tokens headers (and a
// bare x-ratelimit-reset). When x-ratelimit-remaining-* names the bucket
// that ran dry, only its reset counts: the other may be minutes away without
// being the reason for the 429. Otherwise the longest reset wins.
func resetHint(h http.Header, serverNow time.Time) time.Duration {
	var longest, dry time.Duration
	for _, k := range []string{"requests", "tokens", ""} {
		name := strings.TrimSuffix("x-ratelimit-reset-"+k, "-")
		d, ok := parseReset(h.Get(name), serverNow)
		if !ok {
			continue
		}
		longest = max(longest, d)
		if k != "" && strings.TrimSpace(h.Get("x-ratelimit-remaining-"+k)) == "0" {
			dry = max(dry, d)
		}
	}
	if dry > 0 {
		return dry
	}
	return longest
}

// parseReset reads an x-ratelimit-reset-* value: a Go-style duration ("1s",
// "6m0s", "20ms"), plain seconds, a Unix timestamp in seconds or
// milliseconds, or an RFC 3339 time.
func parseReset(v string, serverNow time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return hint(d.Seconds(), time.Second)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case s >= 1e12: // Unix milliseconds
			return until(time.UnixMilli(int64(s)), serverNow)
		case s >= 1e9: // Unix seconds
			return until(time.Unix(int64(s), 0), serverNow)
		}
		return hint(s, time.Second)
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return until(t, serverNow)
	}
	return 0, false
}

// seconds is a count of seconds in a JSON body, given as a number or a
// numeric string; anything else reads as 0 rather than failing the decode.
type seconds float64

func (s *seconds) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(strings.Trim(string(b), `"`), 64)
	if err == nil {
		*s = seconds(f)
	}
	return nil
}

// bodyHint reads hints some providers put in the error body:
// data.retry_after_seconds (Doubao), error.retry_after_seconds, and
// top-level retry_after_seconds or retry_after.
func bodyHint(body []byte) time.Duration {
	var b struct {
		RetryAfter  seconds `json:"retry_after"`
		RetryAfterS seconds `json:"retry_after_seconds"`
		Data        struct {
			RetryAfterS seconds `json:"retry_after_seconds"`
		} `json:"data"`
		Error struct {
			RetryAfterS seconds `json:"retry_after_seconds"`
		} `json:"error"`
	}
	// A field of another shape ("error" as a string, say) only leaves its
	// part empty; the others are still read.
	if err := json.Unmarshal(body, &b); err != nil && !errors.As(err, new(*json.UnmarshalTypeError)) {
		return 0
	}
	for _, s := range []seconds{b.Data.RetryAfterS, b.Error.RetryAfterS, b.RetryAfterS, b.RetryAfter} {
		if d, ok := hint(float64(s), time.Second); ok {
			return d
		}
	}
	return 0
}
