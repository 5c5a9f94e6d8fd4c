package llm_test

import (
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// The zoo's cells. The full cross product (8 algorithms x 7 header styles x
// told/untold x 2 windows x 2 latencies x requests/tokens) is ~900 runs, too
// many for CI; these are the subsets that cover each dimension:
//
//   - requests: every algorithm with the header style it comes with in the
//     wild (zooStyle), told and untold, windows of 1 s and 1 min, latency
//     under (50 ms) and over (1.5 windows) the window; the concurrency cap
//     has no window, so it runs at 1 s only, its cap sized to 20 r/s;
//   - headers: every other style on a fixed window, a token bucket and a
//     sliding counter (HAProxy's stick tables count so, refusals and all,
//     with no header or a Retry-After), told and untold, 1 s window, 50 ms;
//   - tokens: the token bucket, sliding log, fixed window and sliding
//     counter on a token limit with OpenAI's headers, told and untold, both
//     windows and latencies; and the sliding log in three sparser styles;
//   - hostile: random 429s falsely claiming the token window is spent for
//     6 minutes (Retry-After 1), on a server with no limit and on one with
//     a true token limit the client is told.
//
// Request-bound cells send 600 prompts of 50-400 characters at 20 per
// second (1,200 a minute; ideal about 30 s), or with 1 min windows 120 at 24
// a minute (5 windows) so that a latency of 1.5 windows still fits -j 32.
// Token-bound cells send 600 prompts whose long eighth carries 89% of the
// tokens at 10,000 tokens a second (ideal about 27 s), or 120 at 12,000 a
// minute.
func zooCells() []zooCell {
	var cells []zooCell
	for _, alg := range zooAlgorithms {
		for _, w := range []time.Duration{time.Second, time.Minute} {
			if alg == mock.LimiterConcurrency && w != time.Second {
				continue
			}
			for _, over := range []bool{false, true} {
				for _, told := range []bool{true, false} {
					cells = append(cells, requestCell("requests", alg, zooStyle[alg], w, over, told))
				}
			}
		}
	}
	for _, style := range zooStyles {
		for _, alg := range []string{mock.LimiterWindow, mock.LimiterBucket, mock.LimiterSlidingCounter} {
			if style == zooStyle[alg] {
				continue
			}
			for _, told := range []bool{true, false} {
				cells = append(cells, requestCell("headers", alg, style, time.Second, false, told))
			}
		}
	}
	for _, alg := range []string{mock.LimiterBucket, mock.LimiterSlidingLog, mock.LimiterWindow, mock.LimiterSlidingCounter} {
		for _, w := range []time.Duration{time.Second, time.Minute} {
			for _, over := range []bool{false, true} {
				for _, told := range []bool{true, false} {
					cells = append(cells, tokenCell(alg, mock.HeadersOpenAI, w, over, told))
				}
			}
		}
	}
	for _, style := range []string{mock.HeadersIETF, mock.HeadersRetryAfter, mock.HeadersNone} {
		for _, told := range []bool{true, false} {
			cells = append(cells, tokenCell(mock.LimiterSlidingLog, style, time.Second, false, told))
		}
	}
	return append(cells, hostileCells()...)
}

var zooAlgorithms = []string{mock.LimiterBucket, mock.LimiterLeaky, mock.LimiterWindow, mock.LimiterSlidingLog,
	mock.LimiterSlidingCounter, mock.LimiterGCRA, mock.LimiterConcurrency, mock.LimiterPenalty}

var zooStyles = []string{mock.HeadersOpenAI, mock.HeadersIETF, mock.HeadersKong, mock.HeadersGitHub,
	mock.HeadersTraefik, mock.HeadersRetryAfter, mock.HeadersNone}

// zooStyle is the header style each algorithm comes with in the wild:
// OpenAI's buckets, nginx's leaky bucket and its HTML page, Kong's fixed
// windows, Cloudflare's sliding counter (IETF fields), GitHub-like
// X-RateLimit-* from GCRA libraries (throttled, redis-cell), gateways that
// say only Retry-After.
var zooStyle = map[string]string{
	mock.LimiterBucket:         mock.HeadersOpenAI,
	mock.LimiterLeaky:          mock.HeadersNone,
	mock.LimiterWindow:         mock.HeadersKong,
	mock.LimiterSlidingLog:     mock.HeadersOpenAI,
	mock.LimiterSlidingCounter: mock.HeadersIETF,
	mock.LimiterGCRA:           mock.HeadersGitHub,
	mock.LimiterConcurrency:    mock.HeadersRetryAfter,
	mock.LimiterPenalty:        mock.HeadersTraefik,
}

// latency is under the window (50 ms) or over it (1.5 windows).
func latency(w time.Duration, over bool) time.Duration {
	if over {
		return w * 3 / 2
	}
	return 50 * time.Millisecond
}

func requestCell(group, alg, style string, w time.Duration, over, told bool) zooCell {
	cfg := mock.Config{Limiter: alg, Headers: style, Window: w, Latency: latency(w, over), Burst: 0.25, Seed: 1}
	c := zooCell{group: group, mock: cfg, told: told, workers: 32}
	switch {
	case alg == mock.LimiterConcurrency:
		// 20 r/s worth of requests in flight; told, the user passes -j that.
		c.mock.InFlight = max(1, int(20*cfg.Latency/time.Second))
		if told {
			c.workers = c.mock.InFlight
		}
		c.prompts = zooRequests600()
	case w == time.Second:
		c.mock.RPM, c.prompts = 20, zooRequests600()
	default:
		c.mock.RPM, c.prompts = 24, zooRequests120()
	}
	return c
}

func tokenCell(alg, style string, w time.Duration, over, told bool) zooCell {
	cfg := mock.Config{Limiter: alg, Headers: style, Window: w, Latency: latency(w, over), Seed: 1}
	c := zooCell{group: "tokens", mock: cfg, told: told, workers: 32}
	if w == time.Second {
		c.mock.TPM, c.prompts = 10_000, zooTokens600()
	} else {
		c.mock.TPM, c.prompts = 12_000, zooTokens120()
	}
	return c
}

// hostileCells: 10% false claims on tiny prompts and no limit, untold; 5%
// on a true 10,000 tokens a second sliding log, told.
func hostileCells() []zooCell {
	tiny := make([]string, 600)
	for i := range tiny {
		tiny[i] = "tiny " + time.Duration(i).String()
	}
	free := zooCell{group: "hostile", workers: 32, prompts: tiny,
		mock: mock.Config{FalseClaims: 0.1, Latency: 50 * time.Millisecond, Window: time.Second, Headers: mock.HeadersOpenAI, Limiter: mock.LimiterWindow, Seed: 1}}
	limited := tokenCell(mock.LimiterSlidingLog, mock.HeadersOpenAI, time.Second, false, true)
	limited.group, limited.mock.FalseClaims = "hostile", 0.05
	return []zooCell{free, limited}
}
