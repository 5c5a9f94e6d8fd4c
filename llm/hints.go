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

// What a response says about the server's limits is read here once, by
// parseLimits, and retryHint and tokenLimited build on it. All of it is
// pure: headers (and a 429's body) in, figures out.
//
// # The request's own hint
//
// retry-after-ms, then X-Retry-In (Traefik; a Go duration), then
// Retry-After (seconds or an HTTP-date, see parseHTTPDate): the first that
// reads as a positive, believable wait is the hint; the two precise forms
// come first because servers that send them round Retry-After up to whole
// seconds. Then, on a 429 only, the reset of the window that ran dry (or the
// longest reset) of any style below; then body fields
// (data.retry_after_seconds and the like).
//
// # Windows, for requests and for tokens
//
// Per dimension the first style that tells what is left wins, else the
// first that tells anything, in this order (ratelimit_headers.go):
//  1. OpenAI: x-ratelimit-{limit,remaining,reset}-{requests,tokens}.
//  2. Anthropic: anthropic-ratelimit-{requests,tokens,input-tokens}-*.
//  3. IETF draft: RateLimit and RateLimit-Policy, one item per policy.
//  4. Kong: X-RateLimit-{Limit,Remaining}-{Second,...,Month} with
//     RateLimit-Reset; X-RateLimitBySize-* (Mistral) for tokens.
//  5. The older draft: RateLimit-{Limit,Remaining,Reset}, also in the
//     draft-07 form RateLimit: limit=.., remaining=.., reset=..;
//     RateLimitBySize-* for tokens.
//  6. X-RateLimit-{Limit,Remaining,Reset} and X-Rate-Limit-* (GitHub,
//     Envoy, OpenRouter and most others).
//
// Where a style tells several windows, the one that binds is kept: the
// least left per second until it resets (see binding).
//
// # Hostile values
//
// A count that is not a whole number from 0 to maxCount is not told; a
// limit of 0 is not told; what is left is cut to the limit when both are
// told. A wait or window that is not positive, or longer than maxHint, is
// not told. A reset is a delta (a Go duration or seconds) when small and a
// Unix time in seconds or milliseconds when large (see parseReset); dates
// are measured against the response's Date header when it has one, so a
// skewed local clock cannot make the client retry early (a window's reset
// against the local arrival when that lies within the Date's second: see
// withinSecond).

// maxHint bounds the hints believed, in seconds (about 115 days); a larger
// number is a misreading (a timestamp taken for seconds, say).
const maxHint = 1e7

// maxCount bounds the counts believed (about 10^12 requests or tokens).
const maxCount = 1 << 40

// serverLimits is what one response says about the server's limits.
type serverLimits struct {
	Requests   limitInfo // the request window or bucket that binds
	Tokens     limitInfo // the token window or bucket that binds
	Concurrent limitInfo // a cap on requests in flight (IETF qu="concurrent-requests"): Limit and Remaining only

	RetryAfter     time.Duration // the headers' hint for this request; 0 when none
	RetryFrom      string        // the header it came from: "retry-after-ms", "x-retry-in" or "retry-after"
	BodyRetryAfter time.Duration // a hint in the body (data.retry_after_seconds, ...); 0 when none
}

// limitInfo is what a response says of one window or bucket.
type limitInfo struct {
	Limit     int           // its quota or size; 0 when not told
	Remaining int           // what is left of it, at most Limit when both are told; meaningful only when Told
	Told      bool          // Remaining was given
	Reset     time.Duration // from the response's arrival until it resets (see Kind); 0 when not told
	Kind      resetKind     // what Reset means, when the style says
	Window    time.Duration // its length (IETF w, Kong's -Minute); 0 when not told
	From      string        // the style it was read from: "openai", "anthropic", "ietf", "kong", "ratelimit", "x-ratelimit"
	Guessed   bool          // its unit is not said: taken for requests, the limiter weighs it (see pace.Reading)
	Several   bool          // the headers told other windows of the same unit besides (Kong's -Second and -Minute)
	Coarse    bool          // Reset names a whole second still ahead (a Unix time in seconds, a date): the end lies in that second (see untilSecondEnds)
	Clock     bool          // Reset was written as a time of the clock finer than whole seconds (RFC 3339, Unix milliseconds, Kong's clock-aligned window), not as a delta (see reading)
}

// A resetAt says how a reset was written.
type resetAt struct {
	clock  bool // as a time of the clock finer than whole seconds, not a delta
	coarse bool // as a whole second of the clock still ahead (see untilSecondEnds)
}

// setReset sets l's reset, and how it was written, from d and at.
func (l *limitInfo) setReset(d time.Duration, at resetAt) {
	l.Reset, l.Clock, l.Coarse = d, at.clock, at.coarse
}

// known reports whether l tells anything.
func (l limitInfo) known() bool { return l.Told || l.Limit > 0 || l.Reset > 0 || l.Window > 0 }

// resetKind says what a reset means.
type resetKind int

const (
	resetUnknown resetKind = iota // the style does not say (IETF, the older draft, X-RateLimit-*)
	resetWindow                   // a fixed window ends: Remaining is all there is until then (Kong)
	resetFull                     // a bucket is full again: some room may come back before (OpenAI, Anthropic)
)

// parseLimits reads what the response with header h and body (nil but for
// a failed request) says about the server's limits. now is the local time
// the response arrived: every duration counts from it.
func parseLimits(h http.Header, body []byte, now time.Time) serverLimits {
	serverNow := now
	if d, err := http.ParseTime(get(h, "Date")); err == nil {
		serverNow = d
	}
	s := serverLimits{BodyRetryAfter: bodyHint(body)}
	s.RetryAfter, s.RetryFrom = headerHint(h, serverNow)
	windowsNow := withinSecond(now, serverNow)
	for _, read := range styles {
		r := read(h, windowsNow)
		s.Requests = better(s.Requests, r.Requests)
		s.Tokens = better(s.Tokens, r.Tokens)
		s.Concurrent = better(s.Concurrent, r.Concurrent)
	}
	return s
}

// withinSecond returns the server's now that the windows' resets are
// measured against: the local now when it lies within the second the Date
// header names (Date is whole seconds, cut down, so the server's now is
// anywhere in that second and the local one is the closer reading), else
// the Date, a local clock outside its second being skewed. Against the Date
// alone, a Unix reset of whole seconds on a window of a second read up to
// twice its length (express-rate-limit's X-RateLimit-Reset, 1-2 s for 1 s),
// and the tracker held the sends for it: 1.85x the ideal. A request's own
// Retry-After date is still read against the Date (never cut short).
func withinSecond(now, date time.Time) time.Time {
	if !now.Before(date) && now.Before(date.Add(time.Second)) {
		return now
	}
	return date
}

// better returns a, from a style weighed first, unless b tells what is left
// and a does not, or a tells nothing.
func better(a, b limitInfo) limitInfo {
	if a.Told || (!b.Told && a.known()) {
		return a
	}
	return b
}

// headerHint reads the request's own hint: retry-after-ms, X-Retry-In,
// then Retry-After.
func headerHint(h http.Header, serverNow time.Time) (time.Duration, string) {
	if d, ok := parseSeconds(get(h, "Retry-After-Ms"), time.Millisecond); ok {
		return d, "retry-after-ms"
	}
	if d, ok := parseDuration(get(h, "X-Retry-In")); ok {
		return d, "x-retry-in"
	}
	if d, ok := parseSecondsOrDate(get(h, "Retry-After"), serverNow); ok {
		return d, "retry-after"
	}
	return 0, ""
}

// retryHint returns how long the server asked us to wait, or 0 when it gave
// no usable hint, in the order given at the top of this file.
func retryHint(status int, h http.Header, body []byte, now time.Time) time.Duration {
	d, _ := parseLimits(h, body, now).retryHint(status)
	return d
}

// retryHint is the wait s asks for after a response of status, and where
// it was read: "header" or "body"; "" when there is none.
func (s serverLimits) retryHint(status int) (time.Duration, string) {
	if s.RetryAfter > 0 {
		return s.RetryAfter, "header"
	}
	// Servers send their windows with every response: they say when the
	// buckets are full again, which is advice to wait only after a 429.
	if status == http.StatusTooManyRequests {
		if d := s.resetHint(); d > 0 {
			return d, "header"
		}
	}
	if s.BodyRetryAfter > 0 {
		return s.BodyRetryAfter, "body"
	}
	return 0, ""
}

// resetHint is the reset of the window that ran dry: the other may be
// minutes away without being the reason for the 429. When none is known to
// be dry, the longest reset.
func (s serverLimits) resetHint() time.Duration {
	var longest, dry time.Duration
	for _, l := range []limitInfo{s.Requests, s.Tokens} {
		longest = max(longest, l.Reset)
		if l.Told && l.Remaining == 0 {
			dry = max(dry, l.Reset)
		}
	}
	if dry > 0 {
		return dry
	}
	return longest
}

// parseSeconds reads v as a positive number of units ("1.5" seconds,
// "250" ms).
func parseSeconds(v string, unit time.Duration) (time.Duration, bool) {
	if v == "" { // most fields are absent: no error to allocate
		return 0, false
	}
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
	if v = strings.TrimSpace(v); v == "" {
		return 0, false
	}
	if d, ok := parseSeconds(v, time.Second); ok {
		return d, true
	}
	if t, ok := parseHTTPDate(v); ok {
		return until(t, serverNow)
	}
	return 0, false
}

// parseHTTPDate reads an HTTP-date (http.ParseTime's three forms), or
// time.RFC1123 in UTC, which Go servers write by formatting a UTC time with
// it: "Wed, 02 Dec 2026 10:00:01 UTC" where an HTTP-date says GMT
// (sethvargo/go-limiter's httplimit, its X-RateLimit-Reset and
// Retry-After). A zone other than UTC is not read: Go would take its
// abbreviation for an offset of 0 or the local one's.
func parseHTTPDate(v string) (time.Time, bool) {
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil && strings.HasSuffix(v, " UTC") {
		return t, true
	}
	return time.Time{}, false
}

// until is the time from serverNow to t, when it is positive and
// believable; else 0.
func until(t, serverNow time.Time) (time.Duration, bool) { return believable(t.Sub(serverNow)) }

// parseReset reads a reset: a Go-style duration ("1s", "6m0s", "20ms",
// "1m30.5s"), plain seconds, a Unix time in seconds (from 10^9) or
// milliseconds (from 10^12), an RFC 3339 time or an HTTP-date (see
// parseHTTPDate); one in whole seconds up to a second past is the end of
// that second (see untilSecondEnds). Seconds from maxHint to 10^9 fit
// neither and are not told.
func parseReset(v string, serverNow time.Time) (time.Duration, bool) {
	d, _, ok := readReset(v, serverNow)
	return d, ok
}

// readReset is parseReset, and reports too how the reset was written: as
// a time of the clock, and as a whole second of it still ahead (coarse,
// see untilSecondEnds).
func readReset(v string, serverNow time.Time) (d time.Duration, at resetAt, ok bool) {
	if v = strings.TrimSpace(v); v == "" {
		return 0, resetAt{}, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		d, ok := believable(d)
		return d, resetAt{}, ok
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 1e8 { // a delta in seconds; over three years' worth, a time
			d, ok := hint(s, time.Second)
			return d, resetAt{}, ok
		}
		// Unix seconds or milliseconds: whichever is near the server's
		// now (a clock set to 2000, say, has Unix times under 1e9).
		if t := time.Unix(int64(s), 0); near(t, serverNow) {
			return untilSecondEnds(t, serverNow)
		}
		if t := time.UnixMilli(int64(s)); near(t, serverNow) {
			return fine(until(t, serverNow))
		}
		return 0, resetAt{}, false
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return fine(until(t, serverNow))
	}
	if t, ok := parseHTTPDate(v); ok {
		return untilSecondEnds(t, serverNow)
	}
	return 0, resetAt{}, false
}

// fine is a reset written as a time of the clock finer than its seconds.
func fine(d time.Duration, ok bool) (time.Duration, resetAt, bool) {
	return d, resetAt{clock: true}, ok
}

// near reports whether t is near enough serverNow to be a reset.
func near(t, serverNow time.Time) bool {
	d := t.Sub(serverNow)
	return d > -24*time.Hour && d < 400*24*time.Hour
}

// untilSecondEnds is until for a reset given in whole seconds (a Unix time
// in seconds, an HTTP-date), except that one up to a second past is the end
// of that second: servers that cut the window's end down to its second
// write it so while the window is still open (ulule/limiter's and
// go-chi/httprate's X-RateLimit-Reset, expiration.Unix();
// sethvargo/go-limiter's date). Read as past, it was dropped, and the lane
// went on blind at each window's end: ulule's windows of a second starting
// 0.73 s into one, untold, 1.32x the reference, 1.08x read so
// (TestZooForeign). A server that rounds up writes no reset in the past
// but for an answer slower than what was left of the window: then the
// lane holds for what is left of that second.
//
// One still ahead is coarse: the end it tells lies anywhere in that
// second. Servers cut it down (go-chi/httprate's and ulule/limiter's
// expiration.Unix(); httprate's windows start at the limiter's own first
// instant, so its minute ends a fraction into a second): read as the
// second's start, the lane sent into a window still full at each end, and
// a minute's Retry-After followed (httprate's 120 a minute started 0.4 s
// into a second: told 1.06-1.33x, untold 1.65x; see pace.Reading.Coarse).
func untilSecondEnds(t, serverNow time.Time) (d time.Duration, at resetAt, ok bool) {
	ahead := t.After(serverNow)
	if d := serverNow.Sub(t); d > 0 && d < time.Second {
		t = t.Add(time.Second)
	}
	d, ok = until(t, serverNow)
	return d, resetAt{coarse: ahead && ok}, ok
}

// parseDuration reads a Go duration ("1.5s", "3m0s") when it is positive
// and believable.
func parseDuration(v string) (time.Duration, bool) {
	if v = strings.TrimSpace(v); v == "" {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false
	}
	return believable(d)
}

// believable returns d when it is positive and at most maxHint.
func believable(d time.Duration) (time.Duration, bool) {
	if d <= 0 || d > maxHint*time.Second {
		return 0, false
	}
	return d, true
}

// parseCount reads a count: a whole number from 0 to maxCount.
func parseCount(v string) (int, bool) {
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > maxCount {
		return 0, false
	}
	return int(n), true
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
	if len(body) == 0 {
		return 0
	}
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
