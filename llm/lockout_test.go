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
// and, cut once in it, the lane holds until something is admitted: 1.6x.
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
