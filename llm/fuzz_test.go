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
