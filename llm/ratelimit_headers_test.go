package llm

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// captured turns header lines as a server sent them ("Name: value", one a
// line) into a header, as net/http would on receipt.
func captured(t *testing.T, raw string) http.Header {
	t.Helper()
	h := http.Header{}
	for line := range strings.Lines(raw) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			t.Fatalf("not a header line: %q", line)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h
}

// lim is a limitInfo; left < 0 means what is left is not told.
func lim(from string, limit, left int, reset time.Duration, kind resetKind, window time.Duration) limitInfo {
	return limitInfo{Limit: limit, Remaining: max(left, 0), Told: left >= 0, Reset: reset, Kind: kind,
		Window: window, From: from}
}

// several is l as the one that binds of several windows the headers told.
func several(l limitInfo) limitInfo {
	l.Several = true
	return l
}

// server is the server's clock in the captures: 30 s into a minute.
var server = time.Date(2026, 12, 1, 9, 30, 30, 0, time.UTC)

func unixAt(d time.Duration) string   { return strconv.FormatInt(server.Add(d).Unix(), 10) }
func unixMsAt(d time.Duration) string { return strconv.FormatInt(server.Add(d).UnixMilli(), 10) }

type limitsCase struct {
	name string
	raw  string // the response's header lines, Date added
	want serverLimits
}

// checkLimits runs parseLimits on each case; the local clock is an hour
// off the server's, so what is read against the wrong one shows.
func checkLimits(t *testing.T, cases []limitsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := captured(t, tc.raw)
			h.Set("Date", server.Format(http.TimeFormat))
			got := parseLimits(h, nil, server.Add(time.Hour))
			got.Requests.Guessed = false                          // TestGuessedUnits has it
			got.Requests.Coarse, got.Tokens.Coarse = false, false // TestResetCoarse has it, and Clock
			got.Requests.Clock, got.Tokens.Clock = false, false
			if got != tc.want {
				t.Errorf("parseLimits(%v)\n got %+v\nwant %+v", h, got, tc.want)
			}
		})
	}
}

func TestParseLimitsOpenAI(t *testing.T) {
	checkLimits(t, []limitsCase{
		{"OpenAI chat completion", `x-ratelimit-limit-requests: 5000
x-ratelimit-limit-tokens: 160000
x-ratelimit-limit-tokens_usage_based: 160000
x-ratelimit-remaining-requests: 4999
x-ratelimit-remaining-tokens: 159976
x-ratelimit-reset-requests: 12ms
x-ratelimit-reset-tokens: 9ms`, serverLimits{
			Requests: lim("openai", 5000, 4999, 12*time.Millisecond, resetFull, 0),
			Tokens:   lim("openai", 160000, 159976, 9*time.Millisecond, resetFull, 0)}},
		{"OpenAI 429 for tokens", `x-ratelimit-limit-requests: 500
x-ratelimit-remaining-requests: 499
x-ratelimit-reset-requests: 120ms
x-ratelimit-limit-tokens: 30000
x-ratelimit-remaining-tokens: 0
x-ratelimit-reset-tokens: 1m30.5s`, serverLimits{
			Requests: lim("openai", 500, 499, 120*time.Millisecond, resetFull, 0),
			Tokens:   lim("openai", 30000, 0, 90500*time.Millisecond, resetFull, 0)}},
		{"Groq", `x-ratelimit-limit-requests: 14400
x-ratelimit-limit-tokens: 6000
x-ratelimit-remaining-requests: 14370
x-ratelimit-remaining-tokens: 5997
x-ratelimit-reset-requests: 2m59.56s
x-ratelimit-reset-tokens: 7.66s`, serverLimits{
			Requests: lim("openai", 14400, 14370, 179560*time.Millisecond, resetFull, 0),
			Tokens:   lim("openai", 6000, 5997, 7660*time.Millisecond, resetFull, 0)}},
		{"Azure 429: no resets, retry-after-ms", `x-ratelimit-remaining-requests: 7
x-ratelimit-remaining-tokens: 1014
retry-after-ms: 1000
retry-after: 1`, serverLimits{
			Requests: lim("openai", 0, 7, 0, resetFull, 0), Tokens: lim("openai", 0, 1014, 0, resetFull, 0),
			RetryAfter: time.Second, RetryFrom: "retry-after-ms"}},
		{"reset in plain seconds", `x-ratelimit-remaining-requests: 3
x-ratelimit-reset-requests: 1.5`, serverLimits{Requests: lim("openai", 0, 3, 1500*time.Millisecond, resetFull, 0)}},
		{"Anthropic", `anthropic-ratelimit-requests-limit: 50
anthropic-ratelimit-requests-remaining: 49
anthropic-ratelimit-requests-reset: 2026-12-01T09:31:00Z
anthropic-ratelimit-tokens-limit: 50000
anthropic-ratelimit-tokens-remaining: 49500
anthropic-ratelimit-tokens-reset: 2026-12-01T09:30:36Z
anthropic-ratelimit-input-tokens-remaining: 1`, serverLimits{
			Requests: lim("anthropic", 50, 49, 30*time.Second, resetFull, 0),
			Tokens:   lim("anthropic", 50000, 49500, 6*time.Second, resetFull, 0)}},
		{"Anthropic, input tokens only", `anthropic-ratelimit-input-tokens-limit: 40000
anthropic-ratelimit-input-tokens-remaining: 0
anthropic-ratelimit-input-tokens-reset: 2026-12-01T17:30:42+08:00
retry-after: 12`, serverLimits{Tokens: lim("anthropic", 40000, 0, 12*time.Second, resetFull, 0),
			RetryAfter: 12 * time.Second, RetryFrom: "retry-after"}},
	})
}

func TestParseLimitsIETF(t *testing.T) {
	checkLimits(t, []limitsCase{
		{"one policy, with a partition key and spaces", `RateLimit-Policy: "100-in-1min"; q=100; w=60; pk=:MGMzNGM3YmU2MTlj:
RateLimit: "100-in-1min"; r=95; t=25`, serverLimits{Requests: lim("ietf", 100, 95, 25*time.Second, resetUnknown, time.Minute)}},
		{"two policies: the daily one binds", `RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400
RateLimit: "burst";r=50;t=30, "daily";r=10;t=3600`, serverLimits{
			Requests: several(lim("ietf", 1000, 10, time.Hour, resetUnknown, 24*time.Hour))}},
		{"a token policy beside a request one", `RateLimit-Policy: "rpm";q=60;w=60, "tpm";q=10000;w=60;qu="tokens"
RateLimit: "rpm";r=59;t=60, "tpm";r=0;t=12`, serverLimits{
			Requests: lim("ietf", 60, 59, time.Minute, resetUnknown, time.Minute),
			Tokens:   lim("ietf", 10000, 0, 12*time.Second, resetUnknown, time.Minute)}},
		{"a policy named for tokens, no unit", `RateLimit-Policy: "tokens";q=20000;w=60
RateLimit: "tokens";r=150;t=5`, serverLimits{Tokens: lim("ietf", 20000, 150, 5*time.Second, resetUnknown, time.Minute)}},
		{"a unit not known counts requests", `RateLimit-Policy: "w";q=10;w=1;qu="widgets"
RateLimit: "w";r=4;t=1`, serverLimits{Requests: lim("ietf", 10, 4, time.Second, resetUnknown, time.Second)}},
		{"concurrency beside a window", `RateLimit-Policy: "conc";q=8;qu="concurrent-requests", "default";q=100;w=10
RateLimit: "conc";r=0, "default";r=40;t=4`, serverLimits{
			Requests:   lim("ietf", 100, 40, 4*time.Second, resetUnknown, 10*time.Second),
			Concurrent: lim("ietf", 8, 0, 0, resetUnknown, 0)}},
		{"content-bytes not read", `RateLimit-Policy: "bytes";q=1000000;w=60;qu="content-bytes"
RateLimit: "bytes";r=0;t=5`, serverLimits{}},
		{"a policy alone", `RateLimit-Policy: "default";q=100;w=60`,
			serverLimits{Requests: lim("ietf", 100, -1, 0, resetUnknown, time.Minute)}},
		{"token names, odd spaces, two field lines", `RateLimit-Policy: default;q=10;w=5
RateLimit: default ; r=7 ; t=3
RateLimit: other;r=1000;t=1`, serverLimits{Requests: several(lim("ietf", 10, 7, 3*time.Second, resetUnknown, 5*time.Second))}},
		{"case of keys and units", `RateLimit-Policy: "T";Q=5000;W=60;QU="Tokens"
RateLimit: "T";R=10;T=2`, serverLimits{Tokens: lim("ietf", 5000, 10, 2*time.Second, resetUnknown, time.Minute)}},
		{"an item without a policy", `RateLimit: "default";r=3;t=2`,
			serverLimits{Requests: lim("ietf", 0, 3, 2*time.Second, resetUnknown, 0)}},
	})
}

func TestParseLimitsKong(t *testing.T) {
	monthEnd := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Sub(server)
	checkLimits(t, []limitsCase{
		{"second and minute: the minute binds", `X-RateLimit-Limit-Second: 5
X-RateLimit-Remaining-Second: 4
X-RateLimit-Limit-Minute: 10
X-RateLimit-Remaining-Minute: 9
RateLimit-Limit: 5
RateLimit-Remaining: 4
RateLimit-Reset: 1`, serverLimits{Requests: several(lim("kong", 10, 9, 30*time.Second, resetWindow, time.Minute))}},
		{"429: the minute spent, reset from RateLimit-Reset", `X-RateLimit-Limit-Minute: 10
X-RateLimit-Remaining-Minute: 0
X-RateLimit-Limit-Hour: 100
X-RateLimit-Remaining-Hour: 50
RateLimit-Limit: 10
RateLimit-Remaining: 0
RateLimit-Reset: 29
Retry-After: 29`, serverLimits{Requests: several(lim("kong", 10, 0, 29*time.Second, resetWindow, time.Minute)),
			RetryAfter: 29 * time.Second, RetryFrom: "retry-after"}},
		{"two spent: the later reset binds", `x-ratelimit-limit-second: 2
x-ratelimit-remaining-second: 0
x-ratelimit-limit-minute: 20
x-ratelimit-remaining-minute: 0`, serverLimits{Requests: several(lim("kong", 20, 0, 30*time.Second, resetWindow, time.Minute))}},
		{"Mistral's tokens: the month binds", `ratelimitbysize-limit: 500000
ratelimitbysize-remaining: 499000
ratelimitbysize-reset: 25
x-ratelimitbysize-limit-minute: 500000
x-ratelimitbysize-remaining-minute: 499000
x-ratelimitbysize-limit-month: 1000000000
x-ratelimitbysize-remaining-month: 999000000`, serverLimits{
			Tokens: several(lim("kong", 1000000000, 999000000, monthEnd, resetWindow, 31*24*time.Hour))}},
		{"Mistral's tokens, the minute nearly spent", `ratelimitbysize-limit: 500000
ratelimitbysize-remaining: 100
ratelimitbysize-reset: 25
x-ratelimitbysize-limit-minute: 500000
x-ratelimitbysize-remaining-minute: 100
x-ratelimitbysize-limit-month: 1000000000
x-ratelimitbysize-remaining-month: 999000000`, serverLimits{
			Tokens: several(lim("kong", 500000, 100, 25*time.Second, resetWindow, time.Minute))}},
		{"a window's own reset field", `X-RateLimit-Limit-Minute: 60
X-RateLimit-Remaining-Minute: 10
X-RateLimit-Reset-Minute: ` + unixAt(12*time.Second), serverLimits{
			Requests: lim("kong", 60, 10, 12*time.Second, resetWindow, time.Minute)}},
		{"Kong's draft headers alone", `RateLimit-Limit: 10
RateLimit-Remaining: 9
RateLimit-Reset: 30`, serverLimits{Requests: lim("ratelimit", 10, 9, 30*time.Second, resetUnknown, 0)}},
	})
}

func TestParseLimitsDrafts(t *testing.T) {
	checkLimits(t, []limitsCase{
		{"older draft with the window", `RateLimit-Limit: 100, 100;w=60
RateLimit-Remaining: 50
RateLimit-Reset: 30`, serverLimits{Requests: lim("ratelimit", 100, 50, 30*time.Second, resetUnknown, time.Minute)}},
		{"draft 05: the window in RateLimit-Policy", `RateLimit-Limit: 10
RateLimit-Remaining: 9
RateLimit-Reset: 1
RateLimit-Policy: 10;w=1, 50;w=60`, serverLimits{Requests: lim("ratelimit", 10, 9, time.Second, resetUnknown, time.Second)}},
		{"draft 07: a dictionary", `RateLimit-Policy: 100;w=60, 10000;w=86400
RateLimit: limit=100, remaining=50, reset=30`, serverLimits{
			Requests: lim("ratelimit", 100, 50, 30*time.Second, resetUnknown, time.Minute)}},
		{"GitHub: reset as a Unix time", `x-ratelimit-limit: 5000
x-ratelimit-remaining: 4999
x-ratelimit-reset: ` + unixAt(30*time.Minute) + `
x-ratelimit-used: 1
x-ratelimit-resource: core`, serverLimits{Requests: lim("x-ratelimit", 5000, 4999, 30*time.Minute, resetUnknown, 0)}},
		{"OpenRouter: reset in Unix milliseconds", `X-RateLimit-Limit: 20
X-RateLimit-Remaining: 0
X-RateLimit-Reset: ` + unixMsAt(4500*time.Millisecond), serverLimits{
			Requests: lim("x-ratelimit", 20, 0, 4500*time.Millisecond, resetUnknown, 0)}},
		{"Envoy's draft 03", `x-ratelimit-limit: 10, 10;w=60;name="per-minute"
x-ratelimit-remaining: 9
x-ratelimit-reset: 42`, serverLimits{Requests: lim("x-ratelimit", 10, 9, 42*time.Second, resetUnknown, time.Minute)}},
		{"X-Rate-Limit-*", `x-rate-limit-limit: 900
x-rate-limit-remaining: 899
x-rate-limit-reset: ` + unixAt(10*time.Minute), serverLimits{
			Requests: lim("x-ratelimit", 900, 899, 10*time.Minute, resetUnknown, 0)}},
		{"reset as an HTTP-date", `X-RateLimit-Remaining: 1
X-RateLimit-Reset: ` + server.Add(9*time.Second).Format(http.TimeFormat), serverLimits{
			Requests: lim("x-ratelimit", 0, 1, 9*time.Second, resetUnknown, 0)}},
		{"requests from X-RateLimit-*, tokens from OpenAI's (Together)", `x-ratelimit-limit: 10
x-ratelimit-remaining: 9
x-ratelimit-reset: 1
x-ratelimit-limit-tokens: 100000
x-ratelimit-remaining-tokens: 99000`, serverLimits{
			Requests: lim("x-ratelimit", 10, 9, time.Second, resetUnknown, 0),
			Tokens:   lim("openai", 100000, 99000, 0, resetFull, 0)}},
		{"a style that tells what is left beats one that does not", `x-ratelimit-limit-requests: 500
RateLimit: "d";r=3;t=2`, serverLimits{Requests: lim("ietf", 0, 3, 2*time.Second, resetUnknown, 0)}},
		{"Traefik 429", `Retry-After: 2
X-Retry-In: 1.234567891s`, serverLimits{RetryAfter: 1234567891, RetryFrom: "x-retry-in"}},
	})
}

func TestParseLimitsHostile(t *testing.T) {
	many := strings.Repeat(`"p";x=1, `, 40) + `"last";r=1;t=1` // the only item that tells, past the cap
	checkLimits(t, []limitsCase{
		{"negative, fractional, absurd and NaN counts", `x-ratelimit-remaining-requests: -1
x-ratelimit-limit-requests: NaN
x-ratelimit-remaining-tokens: 1e3
x-ratelimit-limit-tokens: 99999999999999999999`, serverLimits{}},
		{"limit 0 not told; what is left cut to the limit", `x-ratelimit-limit-requests: 0
x-ratelimit-remaining-requests: 5
x-ratelimit-limit-tokens: 100
x-ratelimit-remaining-tokens: 150`, serverLimits{
			Requests: lim("openai", 0, 5, 0, resetFull, 0), Tokens: lim("openai", 100, 100, 0, resetFull, 0)}},
		{"negative, NaN and absurd resets and windows", `RateLimit-Policy: "a";q=-5;w=-60, "b";q=10;w=NaN
RateLimit: "a";r=3;t=-1, "b";r=2;t=1e30
X-Retry-In: -3s
Retry-After: -1`, serverLimits{Requests: several(lim("ietf", 10, 2, 0, resetUnknown, 0))}},
		{"resets between seconds and timestamps, and past ones", `x-ratelimit-remaining-requests: 1
x-ratelimit-reset-requests: 500000000
x-ratelimit-remaining-tokens: 1
x-ratelimit-reset-tokens: ` + unixAt(-time.Minute), serverLimits{
			Requests: lim("openai", 0, 1, 0, resetFull, 0), Tokens: lim("openai", 0, 1, 0, resetFull, 0)}},
		{"an unterminated string", `RateLimit: "open;r=5;t=1`, serverLimits{}},
		{"an inner list and empty members", `RateLimit: (a b);r=1, , "x";r=2;t=2,`,
			serverLimits{Requests: lim("ietf", 0, 2, 2*time.Second, resetUnknown, 0)}},
		{"members past maxMembers not read", "RateLimit: " + many, serverLimits{}},
		{"a field past maxField not read", "RateLimit: " + strings.Repeat("x", maxField) + `, "d";r=1;t=1`, serverLimits{}},
		{"X-Retry-In of zero falls through", `X-Retry-In: 0s
Retry-After: 3`, serverLimits{RetryAfter: 3 * time.Second, RetryFrom: "retry-after"}},
	})
}

// TestParseLimitsBody checks that the body's hint is kept apart from the
// headers'.
func TestParseLimitsBody(t *testing.T) {
	s := parseLimits(http.Header{"Retry-After": {"2"}}, []byte(`{"data":{"retry_after_seconds":7}}`), server)
	if s.RetryAfter != 2*time.Second || s.BodyRetryAfter != 7*time.Second {
		t.Errorf("parseLimits: RetryAfter %v, BodyRetryAfter %v; want 2s and 7s", s.RetryAfter, s.BodyRetryAfter)
	}
}

// TestTokenLimitedStyles checks that a 429 is told apart as for requests
// or for tokens under every header style, not OpenAI's alone.
func TestTokenLimitedStyles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		raw    string
		tokens int // the request's estimate
		want   bool
	}{
		{"IETF: the token policy spent", `RateLimit-Policy: "rpm";q=60;w=60, "tpm";q=10000;w=60;qu="tokens"
RateLimit: "rpm";r=59;t=60, "tpm";r=0;t=12`, 10, true},
		{"IETF: the request policy spent", `RateLimit-Policy: "rpm";q=60;w=60, "tpm";q=10000;w=60;qu="tokens"
RateLimit: "rpm";r=0;t=60, "tpm";r=9000;t=12`, 10, false},
		{"IETF: tokens left but too few", `RateLimit-Policy: "tpm";q=10000;w=60;qu="tokens"
RateLimit: "tpm";r=300;t=12`, 4000, true},
		{"IETF: concurrency spent", `RateLimit-Policy: "conc";q=8;qu="concurrent-requests", "tokens";q=1000;w=60
RateLimit: "conc";r=0, "tokens";r=900;t=3`, 10, false},
		{"IETF: a policy named for tokens", `RateLimit-Policy: "tokens";q=20000;w=60
RateLimit: "tokens";r=0;t=5`, 10, true},
		{"Kong: the minute spent", `X-RateLimit-Limit-Minute: 10
X-RateLimit-Remaining-Minute: 0
Retry-After: 29`, 10, false},
		{"Mistral: the tokens of the minute spent", `x-ratelimitbysize-limit-minute: 500000
x-ratelimitbysize-remaining-minute: 0
ratelimitbysize-reset: 25`, 10, true},
		{"Anthropic: tokens spent", `anthropic-ratelimit-requests-remaining: 40
anthropic-ratelimit-tokens-remaining: 0`, 10, true},
		{"X-RateLimit-*: requests spent", `X-RateLimit-Limit: 20
X-RateLimit-Remaining: 0`, 10, false},
		{"Retry-After alone", `Retry-After: 3`, 5000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := classify(429, captured(t, tc.raw), []byte(`{"error":{"message":"slow down"}}`), server)
			e.settle(tc.tokens)
			if e.Kind != RateLimited || e.tokenLimit != tc.want {
				t.Errorf("classify: %v, token limit %v; want rate limited, token limit %v", e.Kind, e.tokenLimit, tc.want)
			}
		})
	}
}

// BenchmarkParseLimits measures parseLimits on a response with no limit
// headers and on one with OpenAI's and the IETF's: the limiter reads every
// response.
func BenchmarkParseLimits(b *testing.B) {
	for _, bc := range []struct{ name, raw string }{
		{"none", "Content-Type: application/json"},
		{"openai+ietf", `x-ratelimit-limit-requests: 5000
x-ratelimit-remaining-requests: 4999
x-ratelimit-reset-requests: 12ms
x-ratelimit-limit-tokens: 160000
x-ratelimit-remaining-tokens: 159976
x-ratelimit-reset-tokens: 9ms
RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400
RateLimit: "burst";r=50;t=30, "daily";r=10;t=3600`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := captured(&testing.T{}, bc.raw)
			b.ReportAllocs()
			for b.Loop() {
				parseLimits(h, nil, server)
			}
		})
	}
}

// TestGuessedUnits: a window whose headers do not say what it counts is
// read as requests, marked guessed, so the limiter weighs it against its
// own counts; one whose style or unit says so is not.
func TestGuessedUnits(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		guessed   bool
	}{
		{"IETF, a policy of no unit", "RateLimit-Policy: \"default\";q=100;w=1\nRateLimit: \"default\";r=5;t=1", true},
		{"IETF, a unit of requests", "RateLimit-Policy: \"p\";q=100;w=1;qu=\"requests\"\nRateLimit: \"p\";r=5;t=1", false},
		{"IETF, a policy named for requests", "RateLimit-Policy: \"requests\";q=100;w=1\nRateLimit: \"requests\";r=5;t=1", false},
		{"the older draft", "RateLimit-Limit: 100\nRateLimit-Remaining: 5\nRateLimit-Reset: 1", true},
		{"X-RateLimit-*", "X-RateLimit-Limit: 100\nX-RateLimit-Remaining: 5\nX-RateLimit-Reset: 1", true},
		{"OpenAI's", "x-ratelimit-limit-requests: 100\nx-ratelimit-remaining-requests: 5\nx-ratelimit-reset-requests: 1s", false},
		{"Kong's", "X-RateLimit-Limit-Second: 100\nX-RateLimit-Remaining-Second: 5", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := captured(t, tc.raw)
			got := parseLimits(h, nil, server)
			if !got.Requests.Told || got.Requests.Guessed != tc.guessed {
				t.Errorf("requests %+v; want told, guessed %v", got.Requests, tc.guessed)
			}
		})
	}
}

// TestParseLimitsGoLibraries reads the headers of the five Go limiters of
// the foreign zoo (zoo_foreign_test.go) as their middleware writes them,
// an admitted answer and a 429 each.
func TestParseLimitsGoLibraries(t *testing.T) {
	rfc1123 := func(d time.Duration) string { return server.Add(d).UTC().Format(time.RFC1123) } // "... UTC"
	checkLimits(t, []limitsCase{
		// go-chi/httprate: the reset is the Unix second the current
		// window ends; a 429's Retry-After is the window's length.
		{"httprate", `X-RateLimit-Limit: 20
X-RateLimit-Remaining: 19
X-RateLimit-Reset: ` + unixAt(time.Second), serverLimits{Requests: lim("x-ratelimit", 20, 19, time.Second, resetUnknown, 0)}},
		{"httprate 429", `X-RateLimit-Limit: 120
X-RateLimit-Remaining: 0
X-RateLimit-Reset: ` + unixAt(40*time.Second) + `
Retry-After: 60`, serverLimits{Requests: lim("x-ratelimit", 120, 0, 40*time.Second, resetUnknown, 0),
			RetryAfter: time.Minute, RetryFrom: "retry-after"}},
		// throttled: the limit is MaxBurst+1; reset and Retry-After are
		// seconds rounded up.
		{"throttled", `X-RateLimit-Limit: 6
X-RateLimit-Remaining: 5
X-RateLimit-Reset: 1`, serverLimits{Requests: lim("x-ratelimit", 6, 5, time.Second, resetUnknown, 0)}},
		{"throttled 429", `X-RateLimit-Limit: 6
X-RateLimit-Remaining: 0
X-RateLimit-Reset: 1
Retry-After: 1`, serverLimits{Requests: lim("x-ratelimit", 6, 0, time.Second, resetUnknown, 0),
			RetryAfter: time.Second, RetryFrom: "retry-after"}},
		// tollbooth: X-Rate-Limit-Limit is a float per
		// X-Rate-Limit-Duration seconds; RateLimit-* (the older draft)
		// tell the bucket, its reset always 1; no Retry-After.
		{"tollbooth", `X-Rate-Limit-Limit: 20.00
X-Rate-Limit-Duration: 1
X-Rate-Limit-Request-Remote-Addr: 192.0.2.1:41000
RateLimit-Limit: 20
RateLimit-Reset: 1
RateLimit-Remaining: 19`, serverLimits{Requests: lim("ratelimit", 20, 19, time.Second, resetUnknown, 0)}},
		{"tollbooth 429", `X-Rate-Limit-Limit: 2.00
X-Rate-Limit-Duration: 1
RateLimit-Limit: 2
RateLimit-Reset: 1
RateLimit-Remaining: 0`, serverLimits{Requests: lim("ratelimit", 2, 0, time.Second, resetUnknown, 0)}},
		// ulule/limiter: the reset is the window's end in Unix seconds;
		// no Retry-After.
		{"ulule", `X-RateLimit-Limit: 120
X-RateLimit-Remaining: 119
X-RateLimit-Reset: ` + unixAt(time.Minute), serverLimits{Requests: lim("x-ratelimit", 120, 119, time.Minute, resetUnknown, 0)}},
		{"ulule 429", `X-RateLimit-Limit: 20
X-RateLimit-Remaining: 0
X-RateLimit-Reset: ` + unixAt(time.Second), serverLimits{Requests: lim("x-ratelimit", 20, 0, time.Second, resetUnknown, 0)}},
		// sethvargo/go-limiter: the reset, and a 429's Retry-After, are
		// the next tick as time.RFC1123 in UTC: "UTC", where an HTTP-date
		// says "GMT".
		{"go-limiter", `X-RateLimit-Limit: 20
X-RateLimit-Remaining: 19
X-RateLimit-Reset: ` + rfc1123(time.Second), serverLimits{Requests: lim("x-ratelimit", 20, 19, time.Second, resetUnknown, 0)}},
		{"go-limiter 429", `X-RateLimit-Limit: 120
X-RateLimit-Remaining: 0
X-RateLimit-Reset: ` + rfc1123(45*time.Second) + `
Retry-After: ` + rfc1123(45*time.Second), serverLimits{Requests: lim("x-ratelimit", 120, 0, 45*time.Second, resetUnknown, 0),
			RetryAfter: 45 * time.Second, RetryFrom: "retry-after"}},
		{"RFC 1123 in a zone other than UTC is not read", `X-RateLimit-Remaining: 0
X-RateLimit-Reset: ` + server.Add(5*time.Second).In(time.FixedZone("EST", -5*3600)).Format(time.RFC1123) + `
Retry-After: ` + server.Add(5*time.Second).In(time.FixedZone("EST", -5*3600)).Format(time.RFC1123),
			serverLimits{Requests: lim("x-ratelimit", 0, 0, 0, resetUnknown, 0)}},
	})
}
