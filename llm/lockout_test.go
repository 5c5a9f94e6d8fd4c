package llm_test

import (
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestLockoutOfAMinute: a fixed window and a sliding log of 24 a minute that
// say nothing (an HTML 429 page, no headers, no hint), told nothing. The
// opening spends the window, and it refuses everything until it ends; cut
// after cut at a second's span, the pace fell to 2 a minute and the run
// took 8.2x the reference. Now the span stretches over the run of refusals
// and, cut once in it, the lane holds until something is admitted: 1.2x
// and 1.65x.
func TestLockoutOfAMinute(t *testing.T) {
	for _, alg := range []string{mock.LimiterWindow, mock.LimiterSlidingLog} {
		c := requestCell("lockout", alg, mock.HeadersNone, time.Minute, false, false)
		r := runZoo(t, c)
		t.Logf("%s: %v, %.2fx the reference, %.1f%% refused", c.name(), r.wall, r.ratio(), 100*r.refusedShare())
		if r.ratio() > 2 || r.answered != len(c.prompts) {
			t.Errorf("%s: %.2fx the reference, %d of %d answered; want at most 2x, all", c.name(), r.ratio(), r.answered, len(c.prompts))
		}
	}
}

// TestLockoutLeftOutOfTheMeasure: sliding counters of 200 per 10 s and
// 600 a minute that say nothing, told nothing. The opening spends the
// window and the lane holds at its wall for as long as it refuses; once it
// reopens, the next refusal's cut is a measure of what the server took
// since, the hold left out. Counted in, 200 per 10 s measured 2 a second
// and 600 a minute 2 a second too (the cut to 123/min), and the runs took
// 2.24x and 2.75x the reference; now 1.03x and 1.28x.
func TestLockoutLeftOutOfTheMeasure(t *testing.T) {
	for _, s := range []wideSpec{
		{alg: mock.LimiterSlidingCounter, style: mock.HeadersNone, window: 10 * time.Second, limit: 200, items: 600, latency: 50 * time.Millisecond, workers: 32},
		{alg: mock.LimiterSlidingCounter, style: mock.HeadersNone, window: time.Minute, limit: 600, items: 1800, latency: 50 * time.Millisecond, workers: 32},
	} {
		c := s.cell(false)
		r := runZoo(t, c)
		t.Logf("%s: %v, %.2fx the reference, %.1f%% refused", c.name(), r.wall, r.ratio(), 100*r.refusedShare())
		if r.ratio() > 1.5 || r.answered != len(c.prompts) {
			t.Errorf("%s: %.2fx the reference, %d of %d answered; want at most 1.5x, all", c.name(), r.ratio(), r.answered, len(c.prompts))
		}
	}
}

// TestTokenLockoutHoldsTheLane: a sliding log of 120,000 tokens a minute
// that tells only Retry-After, told nothing. Spent at the opening, it
// refuses every size until the minute is out; each refusal of a long
// prompt holds only its own request (shorter ones may fit), but a short
// one refused with a hint of seconds holds the lane. Held each on its
// own, the requests waiting were refused one after another: 9.6% of all
// requests refused; now 1.2%.
func TestTokenLockoutHoldsTheLane(t *testing.T) {
	s := wideSpec{alg: mock.LimiterSlidingLog, style: mock.HeadersRetryAfter, window: time.Minute, limit: 120_000, tokens: true,
		items: 600, latency: 50 * time.Millisecond, workers: 32}
	c := s.cell(false)
	r := runZoo(t, c)
	t.Logf("%s: %v, %.2fx the reference, %.1f%% refused", c.name(), r.wall, r.ratio(), 100*r.refusedShare())
	if r.refusedShare() > 0.03 || r.ratio() > 1.2 || r.answered != len(c.prompts) {
		t.Errorf("%s: %.2fx the reference, %.1f%% refused, %d of %d answered; want at most 1.2x, 3%%, all",
			c.name(), r.ratio(), 100*r.refusedShare(), r.answered, len(c.prompts))
	}
}
