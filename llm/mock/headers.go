package mock

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The styles of rate-limit headers a [Handler] can send, as named by
// [Config.Headers]. "The first limit" below is RPM's when it is set, else
// TPM's. In every style, "remaining" is what would be admitted now and
// "reset" the time until all of the limit is back: the window's end for a
// fixed window (and the penalty box, or its ban's end), the time until
// full for a token bucket, until empty for a leaky bucket or GCRA, until
// the newest request leaves for a sliding log, and until the estimate is 0
// for a sliding counter (the end of the next window while this one counts
// anything). A 429's Retry-After is instead the time until that request
// would be admitted.
const (
	// HeadersOpenAI: x-ratelimit-{limit,remaining,reset}-{requests,tokens}
	// on every answer, the reset as a Go duration ("1s", "6m0s", "20ms");
	// a 429 adds Retry-After and retry-after-ms, and its JSON body says
	// whether requests or tokens ran out ("type":"requests" or "tokens").
	HeadersOpenAI = "openai"
	// HeadersIETF: the IETF draft's RateLimit-Policy: "default";q=20;w=1
	// and RateLimit: "default";r=5;t=1 (a second item "tokens" when both
	// limits are set), and the older draft's RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset (seconds) for the first
	// limit; a 429 adds Retry-After, with a JSON body that does not say
	// which limit ran out.
	HeadersIETF = "ietf"
	// HeadersKong: Kong's X-RateLimit-Limit-Second and
	// X-RateLimit-Remaining-Second (-Minute for a window of a minute,
	// -Hour for longer) and RateLimit-Limit, -Remaining, -Reset, for the
	// first limit; a 429 adds Retry-After, with Kong's body
	// {"message":"API rate limit exceeded"}.
	HeadersKong = "kong"
	// HeadersGitHub: X-RateLimit-Limit, -Remaining, -Used, and
	// X-RateLimit-Reset as a Unix time, for the first limit; a 429 adds
	// Retry-After.
	HeadersGitHub = "github"
	// HeadersTraefik: nothing on a 200; a 429 has Traefik's Retry-After
	// and X-Retry-In (a Go duration) and a text/plain body.
	HeadersTraefik = "traefik"
	// HeadersRetryAfter: nothing on a 200; a 429 has Retry-After alone,
	// with OpenAI's JSON body.
	HeadersRetryAfter = "retry-after"
	// HeadersNone: no hint at all; a 429 is nginx's HTML page.
	HeadersNone = "none"
)

// headerStyles lists the styles in the order of their doc, for messages.
var headerStyles = []string{HeadersOpenAI, HeadersIETF, HeadersKong, HeadersGitHub, HeadersTraefik, HeadersRetryAfter, HeadersNone}

// checkHeaders returns an error unless name is a style's name or "".
func checkHeaders(name string) error {
	if name == "" {
		return nil
	}
	for _, n := range headerStyles {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("mock: unknown header style %q: want one of %s", name, strings.Join(headerStyles, ", "))
}

// nginx429 is the page nginx answers a refused request with.
const nginx429 = "<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n" +
	"<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// setLimitHeaders sets the limit headers of the configured style, on a 200
// and a 429 alike.
func (h *Handler) setLimitHeaders(hdr http.Header, v verdict) {
	first, ok := v.req, v.hasReq
	if !ok {
		first, ok = v.tok, v.hasTok
	}
	switch h.cfg.Headers {
	case HeadersOpenAI:
		if v.hasReq {
			setOpenAI(hdr, "Requests", v.req)
		}
		if v.hasTok {
			setOpenAI(hdr, "Tokens", v.tok)
		}
	case HeadersIETF:
		if ok {
			setIETF(hdr, v)
			setOldIETF(hdr, first)
		}
	case HeadersKong:
		if ok {
			unit := kongUnit(first.window)
			hdr["X-Ratelimit-Limit-"+unit] = []string{strconv.Itoa(first.limit)}
			hdr["X-Ratelimit-Remaining-"+unit] = []string{strconv.Itoa(first.remaining)}
			setOldIETF(hdr, first)
		}
	case HeadersGitHub:
		if ok {
			hdr["X-Ratelimit-Limit"] = []string{strconv.Itoa(first.limit)}
			hdr["X-Ratelimit-Remaining"] = []string{strconv.Itoa(first.remaining)}
			hdr["X-Ratelimit-Used"] = []string{strconv.Itoa(max(first.limit-first.remaining, 0))}
			reset := time.Now().Add(first.reset)
			hdr["X-Ratelimit-Reset"] = []string{strconv.FormatInt(ceilDiv(time.Duration(reset.UnixNano()), time.Second), 10)}
		}
	}
}

func setOpenAI(hdr http.Header, kind string, st state) {
	hdr["X-Ratelimit-Limit-"+kind] = []string{strconv.Itoa(st.limit)}
	hdr["X-Ratelimit-Remaining-"+kind] = []string{strconv.Itoa(st.remaining)}
	hdr["X-Ratelimit-Reset-"+kind] = []string{formatReset(st.reset)}
}

// setIETF sets the draft's RateLimit-Policy and RateLimit fields: the
// quota q per window w seconds, what remains r, and t seconds until it is
// all back, rounded up.
func setIETF(hdr http.Header, v verdict) {
	var policy, now []string
	add := func(name string, st state) {
		policy = append(policy, fmt.Sprintf("%q;q=%d;w=%d", name, st.limit, max(ceilDiv(st.window, time.Second), 1)))
		now = append(now, fmt.Sprintf("%q;r=%d;t=%d", name, st.remaining, ceilDiv(st.reset, time.Second)))
	}
	switch {
	case v.hasReq:
		add("default", v.req)
		if v.hasTok {
			add("tokens", v.tok)
		}
	case v.hasTok:
		add("default", v.tok)
	}
	hdr["Ratelimit-Policy"] = []string{strings.Join(policy, ", ")}
	hdr["Ratelimit"] = []string{strings.Join(now, ", ")}
}

// setOldIETF sets the older draft's RateLimit-Limit, -Remaining and -Reset
// (seconds, rounded up), which Kong sends too.
func setOldIETF(hdr http.Header, st state) {
	hdr["Ratelimit-Limit"] = []string{strconv.Itoa(st.limit)}
	hdr["Ratelimit-Remaining"] = []string{strconv.Itoa(st.remaining)}
	hdr["Ratelimit-Reset"] = []string{strconv.FormatInt(ceilDiv(st.reset, time.Second), 10)}
}

// kongUnit names a window the way Kong's headers do.
func kongUnit(w time.Duration) string {
	switch {
	case w <= time.Second:
		return "Second"
	case w <= time.Minute:
		return "Minute"
	default:
		return "Hour"
	}
}

// refuse answers a request that admit turned away with a 429, its hints
// and body in the configured style.
func (h *Handler) refuse(w http.ResponseWriter, v verdict, model string, cost int) {
	hdr := w.Header()
	switch v.refusal {
	case quotaSpent:
		h.quotaSpent.Add(1)
		writeError(w, http.StatusTooManyRequests, errQuota)
		return
	case falseClaim:
		h.falseClaims.Add(1)
		claimSpent(hdr, h.cfg.TPM)
		setRetryHeaders(hdr, time.Second, false)
		writeError(w, http.StatusTooManyRequests, h.openAIRefusal(v, model, cost))
		return
	}
	h.rateLimited.Add(1)
	switch h.cfg.Headers {
	case HeadersNone:
		writeBody(w, http.StatusTooManyRequests, "text/html", nginx429)
		return
	case HeadersTraefik:
		setRetryHeaders(hdr, v.retry, false)
		hdr["X-Retry-In"] = []string{v.retry.String()}
		writeBody(w, http.StatusTooManyRequests, "text/plain; charset=utf-8", "Too Many Requests\n")
		return
	case HeadersKong:
		setRetryHeaders(hdr, v.retry, false)
		writeBody(w, http.StatusTooManyRequests, "application/json; charset=utf-8", `{"message":"API rate limit exceeded"}`+"\n")
		return
	case HeadersIETF, HeadersGitHub:
		setRetryHeaders(hdr, v.retry, false)
		writeError(w, http.StatusTooManyRequests, apiError{Message: "Too many requests: rate limit exceeded.",
			Type: "rate_limit_error", Code: "rate_limit_exceeded"})
		return
	}
	setRetryHeaders(hdr, v.retry, h.cfg.Headers == HeadersOpenAI)
	writeError(w, http.StatusTooManyRequests, h.openAIRefusal(v, model, cost))
}

// claimSpent sets OpenAI's headers claiming that the token window is spent
// for 6 minutes, whatever the truth.
func claimSpent(hdr http.Header, tpm int) {
	setOpenAI(hdr, "Tokens", state{limit: max(tpm, 1_000_000), reset: falseClaimReset})
}

// falseClaimReset is how long a false claim says the token window stays spent.
const falseClaimReset = 6 * time.Minute

// openAIRefusal is the body OpenAI sends with a rate-limit 429.
func (h *Handler) openAIRefusal(v verdict, model string, cost int) apiError {
	kind, limit, used, requested := "requests", h.cfg.RPM, v.req.limit-v.req.remaining, 1
	switch v.refusal {
	case tokensLimit, falseClaim:
		kind, limit, used, requested = "tokens", h.cfg.TPM, v.tok.limit-v.tok.remaining, cost
		if v.refusal == falseClaim {
			limit, used = max(h.cfg.TPM, 1_000_000), max(h.cfg.TPM, 1_000_000)
		}
	case busy:
		return apiError{Message: fmt.Sprintf("Too many concurrent requests for %s: Limit %d. Please try again in %s.",
			model, h.cfg.InFlight, formatReset(v.retry)), Type: "requests", Code: "rate_limit_exceeded"}
	}
	return apiError{
		Message: fmt.Sprintf("Rate limit reached for %s on %s per %v: Limit %d, Used %d, Requested %d. Please try again in %s.",
			model, kind, h.cfg.Window, limit, used, requested, formatReset(v.retry)),
		Type: kind,
		Code: "rate_limit_exceeded",
	}
}
