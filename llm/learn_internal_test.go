package llm

import (
	"math"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestLowerTokensNeedsSeveralSuccesses(t *testing.T) {
	now := time.Now()
	lim := rate.NewLimiter(rate.Limit(16000), 16000) // about 1M tokens a minute
	// One success of 500 tokens over 2s is a weak measure: at most halve.
	_, was, is := lower(lim, 500, 1, 2*time.Second, now, false, true, 500.0/60)
	if is < was*decreaseMin-1 {
		t.Errorf("lower(1 success of 500 tokens) took %.0f/s to %.0f/s, want at most halved", was, is)
	}
	// Many 429s in a row never take it under the biggest request a minute.
	var l *rate.Limiter = lim
	for range 200 {
		l, _, is = lower(l, 0, 0, time.Second, now, false, true, 1000.0/60)
	}
	if is < 1000.0/60-1e-9 || math.IsNaN(is) {
		t.Errorf("after many 429s the token rate is %.3f/s, want at least %.3f/s", is, 1000.0/60)
	}
}
