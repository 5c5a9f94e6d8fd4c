package llm

import (
	"cmp"
	"math"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// The readers of rate-limit header styles, in the order parseLimits weighs
// them (see the top of hints.go). Each reads what its style says of
// requests and tokens and leaves the rest empty. Header names are matched
// as net/http canonicalizes them, so their case does not matter; nor does
// the case of structured-field keys and units.
var styles = []func(h http.Header, serverNow time.Time) serverLimits{
	readOpenAI, readAnthropic, readIETF, readKong, readDraft, readXRateLimit,
}

// fields names the header fields of a limit, what is left and the reset,
// as net/http has them: canonical, so that looking them up costs nothing.
type fields struct{ limit, left, reset string }

// fieldsOf returns the fields prefix{limit,remaining,reset}suffix.
func fieldsOf(prefix, suffix string) fields {
	c := textproto.CanonicalMIMEHeaderKey
	return fields{c(prefix + "limit" + suffix), c(prefix + "remaining" + suffix), c(prefix + "reset" + suffix)}
}

var (
	openAIRequests  = fieldsOf("x-ratelimit-", "-requests")
	openAITokens    = fieldsOf("x-ratelimit-", "-tokens")
	anthropicReqs   = fieldsOf("anthropic-ratelimit-requests-", "")
	anthropicToks   = fieldsOf("anthropic-ratelimit-tokens-", "")
	anthropicInput  = fieldsOf("anthropic-ratelimit-input-tokens-", "")
	draftFields     = fieldsOf("ratelimit-", "")
	bySizeFields    = fieldsOf("ratelimitbysize-", "")
	xRateLimit      = fieldsOf("x-ratelimit-", "")
	xRateLimitAlt   = fieldsOf("x-rate-limit-", "")
	rateLimitField  = textproto.CanonicalMIMEHeaderKey("RateLimit")
	rateLimitPolicy = textproto.CanonicalMIMEHeaderKey("RateLimit-Policy")
)

// readOpenAI reads x-ratelimit-{limit,remaining,reset}-{requests,tokens}.
// OpenAI's reset is "the time until the rate limit resets to its initial
// state": the bucket is full then.
func readOpenAI(h http.Header, serverNow time.Time) serverLimits {
	return serverLimits{Requests: named(h, openAIRequests, "openai", resetFull, serverNow),
		Tokens: named(h, openAITokens, "openai", resetFull, serverNow)}
}

// readAnthropic reads anthropic-ratelimit-*, whose resets are RFC 3339
// times when the bucket is "fully replenished". Of tokens it takes the
// most restrictive figure (tokens-*), else input-tokens-*.
func readAnthropic(h http.Header, serverNow time.Time) serverLimits {
	return serverLimits{Requests: named(h, anthropicReqs, "anthropic", resetFull, serverNow),
		Tokens: cmp.Or(named(h, anthropicToks, "anthropic", resetFull, serverNow),
			named(h, anthropicInput, "anthropic", resetFull, serverNow))}
}

// named reads a limit, what is left and the reset from three fields.
func named(h http.Header, f fields, from string, kind resetKind, serverNow time.Time) limitInfo {
	l := limitInfo{From: from, Kind: kind}
	l.Limit, _ = parseCount(get(h, f.limit))
	l.Remaining, l.Told = parseCount(get(h, f.left))
	d, at, _ := readReset(get(h, f.reset), serverNow)
	l.setReset(d, at)
	return clamp(l)
}

// readIETF reads the current IETF draft: RateLimit-Policy: "p";q=100;w=60
// (q the quota, w the window in seconds, qu the unit) and RateLimit:
// "p";r=50;t=30 (r left, t seconds to reset), each a list with one item per
// policy, matched by name. A policy's unit decides its dimension (see
// unitOf); within each, the policy that binds is kept.
func readIETF(h http.Header, serverNow time.Time) serverLimits {
	policies := parseSF(field(h, rateLimitPolicy))
	byName := map[string]sfMember{}
	for _, p := range slices.Backward(policies) {
		byName[p.value] = p // the first of a name wins
	}
	var dims [dimensions][]limitInfo
	seen := map[string]bool{}
	for _, it := range parseSF(field(h, rateLimitField)) {
		if it.key != "" { // the draft-07 dictionary: readDraft's
			continue
		}
		p, ok := byName[it.value]
		if !ok {
			p = it // its name may still tell its unit
		}
		seen[it.value] = ok
		l := policyInfo(p, ok)
		l.Remaining, l.Told = parseCount(it.params["r"])
		l.Reset, _ = parseReset(it.params["t"], serverNow)
		if d := unitOf(p); d >= 0 {
			l.Guessed = d == requestsDim && !unitSaid(p)
			dims[d] = append(dims[d], clamp(l))
		}
	}
	for _, p := range policies {
		if d := unitOf(p); d >= 0 && !seen[p.value] {
			l := policyInfo(p, true)
			l.Guessed = d == requestsDim && !unitSaid(p)
			dims[d] = append(dims[d], clamp(l))
		}
	}
	return serverLimits{Requests: binding(dims[requestsDim]), Tokens: binding(dims[tokensDim]),
		Concurrent: binding(dims[concurrentDim])}
}

// policyInfo reads a policy's quota and window, when it is one.
func policyInfo(p sfMember, ok bool) limitInfo {
	l := limitInfo{From: "ietf"}
	if ok {
		q, told := p.params["q"]
		if !told {
			q = p.value // the drafts before 08: RateLimit-Policy: 100;w=60
		}
		l.Limit, _ = parseCount(q)
		l.Window, _ = parseSeconds(p.params["w"], time.Second)
	}
	return l
}

// The dimensions a limit may count in.
const (
	requestsDim = iota
	tokensDim
	concurrentDim
	dimensions
)

// unitOf tells what an IETF policy counts, from its qu: "requests" and
// units not known are requests; "concurrent-requests" a cap on those in
// flight; "content-bytes" is not read (-1). Tokens are no standard unit,
// but gateways that count them say so: a unit that names tokens ("tokens",
// "input-tokens"), or, with no unit, a policy named so ("tokens", "tpm").
func unitOf(p sfMember) int {
	qu, name := strings.ToLower(p.params["qu"]), strings.ToLower(p.value)
	switch {
	case strings.Contains(qu, "token"):
		return tokensDim
	case qu == "concurrent-requests":
		return concurrentDim
	case qu == "content-bytes":
		return -1
	case qu == "" && (strings.Contains(name, "token") || name == "tpm" || name == "tpd"):
		return tokensDim
	}
	return requestsDim
}

// unitSaid reports whether an IETF policy says what it counts: by its
// unit, or by a name that speaks of requests or tokens ("default" does
// not).
func unitSaid(p sfMember) bool {
	name := strings.ToLower(p.value)
	return p.params["qu"] != "" || strings.Contains(name, "request") || strings.Contains(name, "token") ||
		strings.Contains(name, "call") || name == "rpm" || name == "rpd" || name == "tpm" || name == "tpd"
}

// kongWindow is a window of Kong's rate-limiting plugin, fixed and aligned
// to the clock (UTC), with its fields for requests and (Mistral's
// X-RateLimitBySize-*) tokens.
type kongWindow struct {
	name     string
	length   time.Duration
	req, tok fields
}

// kongWindows are Kong's windows. Its Year is a quota longer than maxHint,
// not a pace, and is not read.
var kongWindows = func() []kongWindow {
	var ws []kongWindow
	for _, w := range []kongWindow{{name: "second", length: time.Second}, {name: "minute", length: time.Minute},
		{name: "hour", length: time.Hour}, {name: "day", length: 24 * time.Hour}, {name: "month", length: 31 * 24 * time.Hour}} {
		w.req, w.tok = fieldsOf("x-ratelimit-", "-"+w.name), fieldsOf("x-ratelimitbysize-", "-"+w.name)
		ws = append(ws, w)
	}
	return ws
}()

// readKong reads Kong's X-RateLimit-{Limit,Remaining}-{Second,...} for
// requests and X-RateLimitBySize-* (Mistral's) for tokens.
func readKong(h http.Header, serverNow time.Time) serverLimits {
	return serverLimits{Requests: kong(h, func(w kongWindow) fields { return w.req }, draftFields, serverNow),
		Tokens: kong(h, func(w kongWindow) fields { return w.tok }, bySizeFields, serverNow)}
}

// kong reads the windows whose fields of is, and keeps the one that
// binds. A window ends at its next clock boundary, unless its reset field
// (X-RateLimit-Reset-Minute, which some send) says otherwise; and Kong
// tells the reset of the window it found tightest in the draft's fields,
// beside its limit and what is left of it.
func kong(h http.Header, of func(kongWindow) fields, draft fields, serverNow time.Time) limitInfo {
	var ws []limitInfo
	for _, w := range kongWindows {
		f := of(w)
		l := limitInfo{From: "kong", Kind: resetWindow, Window: w.length}
		l.Limit, _ = parseCount(get(h, f.limit))
		l.Remaining, l.Told = parseCount(get(h, f.left))
		if l.Limit == 0 && !l.Told {
			continue
		}
		if d, at, ok := readReset(get(h, f.reset), serverNow); ok {
			l.setReset(d, at)
		} else {
			l.setReset(windowEnd(serverNow, w.name, w.length), resetAt{clock: true})
		}
		ws = append(ws, clamp(l))
	}
	if len(ws) == 0 {
		return limitInfo{}
	}
	limit, _ := parseCount(get(h, draft.limit))
	left, told := parseCount(get(h, draft.left))
	if reset, at, ok := readReset(get(h, draft.reset), serverNow); ok && told {
		for i, w := range ws {
			if w.Told && w.Remaining == left && (limit == 0 || w.Limit == limit) {
				ws[i].setReset(reset, at)
				break
			}
		}
	}
	return binding(ws)
}

// windowEnd is the time from now to the end of the clock-aligned window.
func windowEnd(now time.Time, name string, length time.Duration) time.Duration {
	now = now.UTC()
	end := now.Truncate(length).Add(length)
	if name == "month" {
		end = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return end.Sub(now)
}

// readDraft reads the older drafts: RateLimit-Limit ("100", or "100,
// 100;w=60" with the window), RateLimit-Remaining and RateLimit-Reset
// (delta seconds), the window also from RateLimit-Policy ("100;w=60");
// draft-07's RateLimit: limit=100, remaining=50, reset=30; and Mistral's
// RateLimitBySize-* for tokens.
func readDraft(h http.Header, serverNow time.Time) serverLimits {
	policies := parseSF(field(h, rateLimitPolicy))
	req := triple(h, draftFields, policies, "ratelimit", serverNow)
	if !req.known() {
		d := map[string]string{}
		for _, m := range parseSF(field(h, rateLimitField)) {
			if _, dup := d[m.key]; m.key != "" && !dup {
				d[m.key] = m.value
			}
		}
		req = draftInfo(d["limit"], d["remaining"], d["reset"], policies, "ratelimit", serverNow)
	}
	req.Guessed = req.known() // RateLimit-* says nothing of its unit
	return serverLimits{Requests: req, Tokens: triple(h, bySizeFields, nil, "ratelimit", serverNow)}
}

// readXRateLimit reads X-RateLimit-{Limit,Remaining,Reset} (GitHub,
// OpenRouter, Envoy's "10, 10;w=60") or else X-Rate-Limit-*. Their reset
// is a delta or a Unix time, told apart by size (see parseReset).
func readXRateLimit(h http.Header, serverNow time.Time) serverLimits {
	req := cmp.Or(triple(h, xRateLimit, nil, "x-ratelimit", serverNow), triple(h, xRateLimitAlt, nil, "x-ratelimit", serverNow))
	req.Guessed = req.known() // nor does X-RateLimit-*
	return serverLimits{Requests: req}
}

// triple reads the fields f in the older draft's form (see draftInfo).
func triple(h http.Header, f fields, policies []sfMember, from string, serverNow time.Time) limitInfo {
	return draftInfo(get(h, f.limit), get(h, f.left), get(h, f.reset), policies, from, serverNow)
}

// draftInfo reads a limit list, what is left and a reset. The first item
// of the limit list is the limit; the window is the w of an item (or of a
// policy) with the same quota.
func draftInfo(limit, left, reset string, policies []sfMember, from string, serverNow time.Time) limitInfo {
	l := limitInfo{From: from}
	if ls := parseSF(limit); len(ls) > 0 {
		l.Limit, _ = parseCount(ls[0].value)
		for _, m := range append(ls, policies...) {
			if w, ok := parseSeconds(m.params["w"], time.Second); ok && m.value == ls[0].value {
				l.Window = w
				break
			}
		}
	}
	if rs := parseSF(left); len(rs) > 0 {
		l.Remaining, l.Told = parseCount(rs[0].value)
	}
	d, at, _ := readReset(reset, serverNow)
	l.setReset(d, at)
	return clamp(l)
}

// clamp cuts what is left to the limit, and returns the zero limitInfo for
// one that tells nothing.
func clamp(l limitInfo) limitInfo {
	if !l.known() {
		return limitInfo{}
	}
	if l.Told && l.Limit > 0 {
		l.Remaining = min(l.Remaining, l.Limit)
	}
	return l
}

// binding returns the one of ls that binds. Of those that tell what is
// left, it is the one with the least left per second until it resets (of
// those spent, the one that resets last); else the one with the least
// quota per second of its window; else the first.
func binding(ls []limitInfo) limitInfo {
	told := slices.ContainsFunc(ls, func(l limitInfo) bool { return l.Told })
	var best limitInfo
	least := math.Inf(1)
	known := 0
	for _, l := range ls {
		if l.known() {
			known++
		}
		if told && !l.Told {
			continue
		}
		r := room(l)
		if !best.known() || r < least || (r == least && l.Reset > best.Reset) {
			best, least = l, r
		}
	}
	best.Several = known > 1
	return best
}

// room is how much l leaves per second.
func room(l limitInfo) float64 {
	switch {
	case l.Told:
		return float64(l.Remaining) / cmp.Or(l.Reset, l.Window, time.Second).Seconds()
	case l.Limit > 0 && l.Window > 0:
		return float64(l.Limit) / l.Window.Seconds()
	}
	return math.Inf(1)
}
