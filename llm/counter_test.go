package llm_test

import (
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestSlidingCounterPastItsLength: a sliding counter whose reset says when
// its count will be 0 (the end of the next window, up to twice its length
// on) with OpenAI's headers, which do not tell the length. Held for the
// whole reset, the lane sent only at resets and took 1.75x (untold) and
// 1.84x (told) the ideal; probed, then followed as a counter, about 1.0x.
func TestSlidingCounterPastItsLength(t *testing.T) {
	for _, told := range []bool{false, true} {
		c := requestCell("headers", mock.LimiterSlidingCounter, mock.HeadersOpenAI, time.Second, false, told)
		r := runZoo(t, c)
		t.Logf("%s: %v, %.2fx the reference, %.1f%% refused", c.name(), r.wall, r.ratio(), 100*r.refusedShare())
		if r.ratio() > 1.10 || r.refusedShare() > 0.01 || r.answered != len(c.prompts) {
			t.Errorf("%s: %.2fx the reference, %.1f%% refused, %d of %d answered; want at most 1.10x, 1%%, all",
				c.name(), r.ratio(), 100*r.refusedShare(), r.answered, len(c.prompts))
		}
	}
}
