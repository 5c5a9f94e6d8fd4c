// Package mock is a fake OpenAI-compatible chat completions provider: an
// [http.Handler] with deterministic answers, rate limits, latency, faults and
// a quota, used by `llmbatch run --provider mock`, `llmbatch mock serve`,
// tests and benchmarks.
package mock

import (
	"crypto/subtle"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Config sets the mock's behaviour; the zero value answers at once, without
// limits or faults.
type Config struct {
	Model    string        // model name echoed when the request has none; default "mock-1"
	APIKey   string        // when set, requests without "Authorization: Bearer <APIKey>" get 401
	Latency  time.Duration // added to every admitted request
	Jitter   time.Duration // plus a uniform random 0..Jitter
	RPM      int           // requests allowed per Window; beyond it 429 with Retry-After (0 = no limit)
	TPM      int           // estimated tokens (prompt chars/4 + max_tokens) allowed per Window (0 = no limit)
	Window   time.Duration // the limit window; default 1 minute
	FailRate float64       // fraction of admitted requests answered with a 500/502/503, decided by a seeded RNG
	Seed     uint64        // seeds the RNG behind FailRate and Jitter
	Quota    int           // after this many successful answers, every request gets 429 insufficient_quota (0 = unlimited)
	// NoLimitHeaders leaves out the x-ratelimit-* headers and retry-after-ms,
	// as servers that say little do; a 429 still carries Retry-After.
	NoLimitHeaders bool
	// Bucket makes RPM and TPM buckets that refill continuously, a whole
	// one per Window, as OpenAI's limits do, instead of fixed windows;
	// x-ratelimit-reset-* then says when a bucket will be full again. It
	// is Limiter "bucket" under its older name.
	Bucket bool

	// Limiter names the algorithm that counts RPM and TPM: one of
	// [LimiterWindow] (the default; [LimiterBucket] with Bucket),
	// [LimiterBucket], [LimiterLeaky], [LimiterSlidingLog],
	// [LimiterSlidingCounter], [LimiterGCRA], [LimiterConcurrency] and
	// [LimiterPenalty]. New treats an unknown name as the default; see
	// [Config.Validate].
	Limiter string
	// Burst is, for LimiterLeaky and LimiterGCRA, the share of a window's
	// limit admitted at once beyond the first request: 0.25 of 20 requests
	// a second lets 6 through at once, then one every 50ms. 0: none.
	Burst float64
	// FirstWindows makes the fixed windows of LimiterWindow and
	// LimiterPenalty start at the first request admitted after the last
	// window ended, as the memory stores of express-rate-limit and
	// rate-limiter-flexible count a client's window, instead of being
	// aligned to the handler's start.
	FirstWindows bool
	// Penalty is how long LimiterPenalty refuses every request after it
	// has refused one; default Window.
	Penalty time.Duration
	// InFlight caps the requests in flight: beyond it, 429 at once, with
	// Latency as the hint. It works with any Limiter, and is the only
	// limit of LimiterConcurrency (default 1 there); 0: no cap.
	InFlight int
	// Headers names the style of the rate-limit headers and 429 bodies:
	// one of [HeadersOpenAI] (the default; [HeadersRetryAfter] with
	// NoLimitHeaders), [HeadersIETF], [HeadersKong], [HeadersGitHub],
	// [HeadersTraefik], [HeadersRetryAfter] and [HeadersNone].
	Headers string
	// FalseClaims is the fraction of requests answered 429, at random from
	// the seeded RNG and whatever the limits say, with headers claiming
	// the token window is spent for 6 minutes (x-ratelimit-remaining-tokens
	// 0, x-ratelimit-reset-tokens 6m0s) and Retry-After 1: a hostile
	// server, to test that a client weighs such a claim and does not stall.
	FalseClaims float64

	// Batch sets up the Files and Batch APIs (batchapi.go).
	Batch BatchConfig
}

// DefaultModel is the model name answered when neither the request nor
// [Config.Model] names one.
const DefaultModel = "mock-1"

// withDefaults returns c with its zero or negative fields replaced by the
// documented defaults, so the hot path never has to check them.
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Window <= 0 {
		c.Window = time.Minute
	}
	c.Latency = max(c.Latency, 0)
	c.Jitter = max(c.Jitter, 0)
	c.RPM = max(c.RPM, 0)
	c.TPM = max(c.TPM, 0)
	c.Quota = max(c.Quota, 0)
	c.FailRate = min(max(c.FailRate, 0), 1)
	c.FalseClaims = min(max(c.FalseClaims, 0), 1)
	c.Burst = max(c.Burst, 0)
	c.InFlight = max(c.InFlight, 0)
	if checkLimiter(c.Limiter) != nil || c.Limiter == "" {
		c.Limiter = LimiterWindow
		if c.Bucket {
			c.Limiter = LimiterBucket
		}
	}
	if c.Limiter == LimiterConcurrency && c.InFlight == 0 {
		c.InFlight = 1
	}
	if c.Penalty <= 0 {
		c.Penalty = c.Window
	}
	if checkHeaders(c.Headers) != nil || c.Headers == "" {
		c.Headers = HeadersOpenAI
		if c.NoLimitHeaders {
			c.Headers = HeadersRetryAfter
		}
	}
	return c
}

// Validate reports an unknown [Config.Limiter] or [Config.Headers] name,
// which New would take for the default, and a Burst or FalseClaims outside
// [0, 1], which New would clamp.
func (c Config) Validate() error {
	if err := checkLimiter(c.Limiter); err != nil {
		return err
	}
	if err := checkHeaders(c.Headers); err != nil {
		return err
	}
	if !(c.Burst >= 0 && c.Burst <= 1) || !(c.FalseClaims >= 0 && c.FalseClaims <= 1) {
		return fmt.Errorf("mock: burst %v and false claims %v must be fractions between 0 and 1", c.Burst, c.FalseClaims)
	}
	return nil
}

// Stats are the counters of a [Handler] so far. Requests counts every HTTP
// request served, whatever its route or outcome; the others count outcomes
// of chat completion requests, except Unauthorized, which counts 401s on any
// route.
type Stats struct {
	Requests     int64 // every request served
	OK           int64 // 200 answers to chat completions
	RateLimited  int64 // 429 rate_limit_exceeded: requests, tokens or the in-flight cap (not FalseClaims)
	Failed       int64 // injected 500/502/503 faults
	Unauthorized int64 // 401s

	QuotaSpent  int64 // 429 insufficient_quota
	BadRequests int64 // 400, 404, 405 and 413 answers

	FalseClaims int64 // 429s of FalseClaims, not counted in RateLimited

	PromptTokens     int64 // summed over OK answers
	CompletionTokens int64 // summed over OK answers
}

// Handler is the mock provider. It serves
//
//	POST /v1/chat/completions (and /chat/completions)
//	GET  /v1/models (and /models)
//	the Files and Batch APIs: /v1/files and /v1/batches (see [BatchConfig])
//
// and answers anything else with a 404 in OpenAI's error format. Handler is
// safe for concurrent use by multiple goroutines and starts none of its own.
//
// # A chat request's path
//
// Each step either answers or passes the request on:
//
//  1. a missing or wrong key (when [Config.APIKey] is set, on every route): 401 invalid_api_key;
//  2. a body that is not JSON, has no messages or has max_tokens < 1: 400; over 32 MiB: 413;
//  3. [Config.Quota] spent: 429 insufficient_quota;
//  4. a false claim, at random with [Config.FalseClaims]: 429 whose OpenAI
//     headers say the token window is spent for 6 minutes, with Retry-After 1;
//  5. the limits: [Config.InFlight] requests in flight, or the RPM or TPM of
//     [Config.Limiter]'s algorithm spent: 429 with the hints and body of
//     [Config.Headers]' style. Refused requests count against the limit only
//     for [LimiterSlidingCounter] (and start [LimiterPenalty]'s ban); admitted
//     ones count whatever happens to them next. A request costing more than
//     the whole limit is admitted when nothing else is counted rather than
//     refused for ever;
//  6. Latency plus jitter pass (a client that leaves first gets 499 and the request
//     gives back its quota);
//  7. [Config.FailRate]: 500, 502 or 503 with a server_error body;
//  8. the answer: [Answer] of the last user message, or with response_format
//     json_object and an array of {"id","input"} objects in that message,
//     {"results":[{"id":...,"output":Answer(input)},...]}. A max_tokens below
//     the answer's estimate cuts it to max_tokens*4 bytes, finish_reason "length".
//
// Tokens are estimated as characters/4, at least 1. Successful answers and 429s
// carry the limit headers of [Config.Headers]' style for the limits that are
// set (by default OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens}).
type Handler struct {
	cfg     Config
	authHdr []byte    // "Bearer <APIKey>", or nil when no key is required
	start   time.Time // windows are aligned to it
	ids     atomic.Int64

	// mu guards the meters, the quota grants and the RNG. All of a
	// request's draws happen in one critical section, so the k-th request
	// admitted gets the k-th draws and a fixed Seed gives a fixed number of
	// faults however the requests interleave.
	mu      sync.Mutex
	lim     limits
	granted int // successful answers counted against Quota, in flight included
	rng     *rand.Rand

	requests, ok, rateLimited, failed, unauthorized atomic.Int64
	quotaSpent, badRequests, falseClaims            atomic.Int64
	promptTokens, completionTokens                  atomic.Int64

	batches batchStore // the Files and Batch APIs' files and batches
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler for cfg, with its limit windows starting now.
func New(cfg Config) *Handler {
	cfg = cfg.withDefaults()
	h := &Handler{
		cfg:   cfg,
		start: time.Now(),
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	h.lim = newLimits(cfg, h.start)
	if cfg.APIKey != "" {
		h.authHdr = []byte("Bearer " + cfg.APIKey)
	}
	return h
}

// Stats returns the counters so far. Each counter is read atomically, but
// the set is not a snapshot of one instant while requests are in flight.
func (h *Handler) Stats() Stats {
	return Stats{
		Requests:         h.requests.Load(),
		OK:               h.ok.Load(),
		RateLimited:      h.rateLimited.Load(),
		Failed:           h.failed.Load(),
		Unauthorized:     h.unauthorized.Load(),
		QuotaSpent:       h.quotaSpent.Load(),
		BadRequests:      h.badRequests.Load(),
		FalseClaims:      h.falseClaims.Load(),
		PromptTokens:     h.promptTokens.Load(),
		CompletionTokens: h.completionTokens.Load(),
	}
}

// ServeHTTP checks the key, then routes the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if h.authHdr != nil && !h.authorized(r) {
		h.unauthorized.Add(1)
		writeError(w, http.StatusUnauthorized, errBadKey)
		return
	}
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			h.notAllowed(w, http.MethodPost)
			return
		}
		h.chat(w, r)
	case "/v1/models", "/models":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.notAllowed(w, http.MethodGet)
			return
		}
		h.models(w)
	default:
		if h.serveBatchAPI(w, r) {
			return
		}
		h.badRequests.Add(1)
		writeError(w, http.StatusNotFound, apiError{
			Message: "Unknown request URL: " + r.Method + " " + r.URL.Path + ".",
			Type:    "invalid_request_error",
			Code:    "unknown_url",
		})
	}
}

// authorized reports whether r carries the configured key. The comparison
// takes constant time so the mock cannot be used to guess a key.
func (h *Handler) authorized(r *http.Request) bool {
	got := r.Header.Get("Authorization")
	return subtle.ConstantTimeCompare([]byte(got), h.authHdr) == 1
}

func (h *Handler) notAllowed(w http.ResponseWriter, allow string) {
	h.badRequests.Add(1)
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, apiError{
		Message: "Method not allowed; use " + allow + ".",
		Type:    "invalid_request_error",
		Code:    "method_not_allowed",
	})
}

// models answers GET /v1/models with a list holding the configured model.
func (h *Handler) models(w http.ResponseWriter) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{h.cfg.Model, "model", h.start.Unix(), "llmbatch"}}})
}
