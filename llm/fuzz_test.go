package llm

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzRetryHint feeds classify any status, rate-limit headers and body. It
// must not panic; a hint is never negative nor beyond maxHint (a server
// cannot park the run for years); an explicit retry-after-ms that reads as
// a believable number is taken exactly; and what the error keeps of the
// body is printable and bounded. Seeds are in testdata/fuzz/FuzzRetryHint.
func FuzzRetryHint(f *testing.F) {
	f.Add(429, "1500", "", "", "", "", "", `{"error":{"code":"rate_limit_exceeded"}}`)
	f.Add(429, "", "Wed, 21 Oct 2015 07:28:00 GMT", "6m0s", "1s", "0", "5", `{"data":{"retry_after_seconds":"3"}}`)
	f.Add(503, "", "120", "", "", "", "", "<html>maintenance</html>")
	f.Add(429, "NaN", "-1", "1e12", "1700000000", "1", "0", `[{"error":{"message":"slow down","retry_after":2}}]`)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, retryMs, retryAfter, resetReq, resetTok, remainReq, remainTok, body string) {
		h := http.Header{}
		for k, v := range map[string]string{"retry-after-ms": retryMs, "Retry-After": retryAfter,
			"x-ratelimit-reset-requests": resetReq, "x-ratelimit-reset-tokens": resetTok,
			"x-ratelimit-remaining-requests": remainReq, "x-ratelimit-remaining-tokens": remainTok} {
			if v != "" {
				h.Set(k, v)
			}
		}
		status = 100 + abs(status)%500
		d := retryHint(status, h, []byte(body), now)
		if d < 0 || d > time.Duration(maxHint)*time.Second+time.Second {
			t.Fatalf("retryHint(%d, %v, %q) = %v, want 0 to %v", status, h, body, d, time.Duration(maxHint)*time.Second)
		}
		if ms, err := strconv.ParseFloat(strings.TrimSpace(retryMs), 64); err == nil && ms >= 1 && ms < 1e9 {
			if want := time.Duration(ms * float64(time.Millisecond)); d < want || d > want+time.Microsecond {
				t.Fatalf("retryHint with retry-after-ms %q = %v, want %v", retryMs, d, want)
			}
		}
		e := classify(status, h, []byte(body), now)
		if e.Kind.String() == "" || strings.HasPrefix(e.Kind.String(), "kind(") {
			t.Fatalf("classify(%d) Kind = %v, not a known kind", status, e.Kind)
		}
		if e.RetryAfter < 0 {
			t.Fatalf("classify(%d) RetryAfter = %v", status, e.RetryAfter)
		}
		for _, s := range []string{e.Code, e.Message} {
			if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("classify(%d, %q) keeps %q: not printable", status, body, s)
			}
			if len(s) > maxMessage+len("…") {
				t.Fatalf("classify(%d) keeps %d bytes of text, want at most %d", status, len(s), maxMessage)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the least int
			return 0
		}
		return -n
	}
	return n
}

// fuzzHeaders are the fields FuzzParseLimits fills, one value a line.
var fuzzHeaders = []string{
	"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
	"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
	"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset",
	"RateLimit", "RateLimit-Policy",
	"X-RateLimit-Limit-Second", "X-RateLimit-Remaining-Second", "X-RateLimit-Limit-Minute", "X-RateLimit-Remaining-Minute",
	"X-RateLimitBySize-Limit-Month", "X-RateLimitBySize-Remaining-Month", "RateLimitBySize-Reset",
	"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"Retry-After", "retry-after-ms", "X-Retry-In", "Date",
}

// FuzzParseLimits feeds parseLimits any values of the fields it reads, one
// a line in the order of fuzzHeaders, at any local time. It must not
// panic; no duration is negative or beyond maxHint; no count is negative,
// what is left is never more than the limit when both are told, and is 0
// when not told; and a 429 can be classified with them.
func FuzzParseLimits(f *testing.F) {
	f.Add("5000\n4999\n12ms\n160000\n0\n1m30.5s\n\n\n\n\"a\";r=5;t=2, \"b\";r=0;t=9\n\"a\";q=10;w=60, \"b\";q=5;w=1;qu=\"tokens\"", int64(1764581430))
	f.Add(strings.Repeat("\n", 11)+"5\n4\n10\n-9\n1e12\n5\n25\n10, 10;w=60;name=\"m\"\n11\nNaN\n", int64(0))
	f.Add(strings.Repeat("\n", 21)+"20\n30\n1764581440000\nWed, 21 Oct 2015 07:28:00 GMT\n-5\n1.5s\nTue, 01 Dec 2026 09:30:30 GMT", int64(-1))
	f.Add("\n\n\n\n\n\n\n\n\nlimit=100, remaining=50, reset=30\n100;w=60, 10000;w=86400;qu=concurrent-requests", int64(1<<40))
	f.Fuzz(func(t *testing.T, values string, unix int64) {
		h := http.Header{}
		for i, v := range strings.Split(values, "\n") {
			if i < len(fuzzHeaders) && v != "" {
				h.Set(fuzzHeaders[i], v)
			}
		}
		now := time.Unix(unix%(1<<36), 0)
		s := parseLimits(h, nil, now)
		for _, d := range []time.Duration{s.RetryAfter, s.BodyRetryAfter} {
			if d < 0 || d > maxHint*time.Second {
				t.Fatalf("parseLimits(%v): a hint of %v", h, d)
			}
		}
		for _, l := range []limitInfo{s.Requests, s.Tokens, s.Concurrent} {
			switch {
			case l.Reset < 0 || l.Reset > maxHint*time.Second || l.Window < 0 || l.Window > maxHint*time.Second:
				t.Fatalf("parseLimits(%v): reset %v, window %v", h, l.Reset, l.Window)
			case l.Limit < 0 || l.Remaining < 0 || l.Limit > maxCount:
				t.Fatalf("parseLimits(%v): limit %d, remaining %d", h, l.Limit, l.Remaining)
			case l.Told && l.Limit > 0 && l.Remaining > l.Limit:
				t.Fatalf("parseLimits(%v): remaining %d over the limit %d", h, l.Remaining, l.Limit)
			case !l.Told && l.Remaining != 0:
				t.Fatalf("parseLimits(%v): remaining %d not told", h, l.Remaining)
			case l.Kind < resetUnknown || l.Kind > resetFull:
				t.Fatalf("parseLimits(%v): kind %d", h, l.Kind)
			}
		}
		if e := classify(429, h, nil, now); e.RetryAfter < 0 || (e.tokenLimit && !e.tokenSure) {
			t.Fatalf("classify(429, %v): hint %v, token limit %v but not sure", h, e.RetryAfter, e.tokenLimit)
		}
	})
}
