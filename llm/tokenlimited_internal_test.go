package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestTokenLimited(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		tokens int // the request's estimate
		want   bool
		open   bool // left for the limiter to weigh by size
	}{
		{"tokens spent", map[string]string{"x-ratelimit-remaining-tokens": "0"}, "", 10, true, false},
		{"tokens left but too few, body says tokens", map[string]string{"x-ratelimit-remaining-tokens": "1200"},
			`{"error":{"message":"Rate limit reached for m on tokens per 1s: Limit 20000, Used 18800, Requested 4000.","type":"tokens","code":"rate_limit_exceeded"}}`, 4000, true, false},
		{"too few tokens left for it, no words", map[string]string{"x-ratelimit-remaining-tokens": "1200", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, 4000, true, false},
		{"enough tokens left for it, no words (Azure's request slices)", map[string]string{"x-ratelimit-remaining-tokens": "1014", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded the limit. Please retry after 1 second."}}`, 300, false, false},
		{"Azure call rate", map[string]string{"x-ratelimit-remaining-tokens": "1014", "x-ratelimit-remaining-requests": "7"},
			`{"error":{"code":"RateLimitReached","message":"Your requests exceeded call rate limit of your current pricing tier."}}`, 3000, false, false},
		{"requests spent", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "5000"}, "", 10, false, false},
		{"both spent: requests rule", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0"}, "", 10, false, false},
		{"tokens left, body says requests", map[string]string{"x-ratelimit-remaining-tokens": "9000"},
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500, Requested 1."}}`, 10, false, false},
		{"no headers, OpenAI TPM message", nil,
			`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29500, Requested 900."}}`, 900, true, false},
		{"no headers, RPM message", nil,
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1."}}`, 10, false, false},
		{"no headers, no words", nil, `{"error":{"message":"Too many requests"}}`, 5000, false, true},
		{"nginx's HTML page", nil, `<html><head><title>429 Too Many Requests</title></head></html>`, 5000, false, true},
		{"a spent window of no unit said, no words", map[string]string{"RateLimit-Policy": `"default";q=10000;w=1`, "RateLimit": `"default";r=0;t=1`},
			`{"error":{"message":"Too many requests"}}`, 3000, false, true},
		{"a spent window of requests said", map[string]string{"RateLimit-Policy": `"default";q=20;w=1;qu="requests"`, "RateLimit": `"default";r=0;t=1`},
			`{"error":{"message":"Too many requests"}}`, 3000, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			e := classify(429, h, []byte(tc.body), time.Now())
			e.settle(tc.tokens)
			if e.Kind != RateLimited || e.tokenLimit != tc.want {
				t.Errorf("classify: %v, token limit %v; want rate limited, token limit %v", e.Kind, e.tokenLimit, tc.want)
			}
			if o := outcome(h, e, false, time.Now(), time.Now()); o.Unsure != tc.open {
				t.Errorf("the limiter is told unsure %v, want %v", o.Unsure, tc.open)
			}
		})
	}
}

// TestFineHint: a 429's hint of one second counts as told finely only
// when it came in a form finer than whole seconds (see pace.Outcome).
func TestFineHint(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		header, value string
		fine          bool
	}{
		{"Retry-After", "1", false},
		{"X-Retry-In", "1s", true},
		{"Retry-After-Ms", "1000", true},
		// No hint of its own: the reset of the window spent, in whole seconds.
		{"RateLimit", `"default";r=0;t=1`, false},
		{"X-RateLimit-Reset", "1", false},
	} {
		h := http.Header{}
		h.Set(tc.header, tc.value)
		h.Set("RateLimit-Policy", `"default";q=10;w=1`)
		h.Set("X-RateLimit-Limit", "10")
		h.Set("X-RateLimit-Remaining", "0")
		err := classify(http.StatusTooManyRequests, h, nil, now)
		o := outcome(h, err, false, now, now)
		if o.Hint != time.Second || o.FineHint != tc.fine {
			t.Errorf("%s: %s: hint %v, fine %v; want 1s, %v", tc.header, tc.value, o.Hint, o.FineHint, tc.fine)
		}
	}
}
