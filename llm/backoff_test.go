package llm

import (
	"math"
	"testing"
	"time"
)

func TestFullJitter(t *testing.T) {
	tests := []struct {
		name      string
		base, max time.Duration
	}{
		{"1s to 60s", time.Second, time.Minute},
		{"base above max", time.Hour, time.Second},
		{"nanoseconds", 1, 3},
		{"huge base", math.MaxInt64 / 2, math.MaxInt64},
		{"huge max", time.Millisecond, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := FullJitter(tt.base, tt.max)
			for _, attempt := range append([]int{-5, 0, math.MaxInt, math.MinInt}, attemptRange(1, 70)...) {
				ceil := jitterCeil(tt.base, tt.max, attempt)
				for range 20 {
					if d := b(attempt); d < 0 || d >= ceil {
						t.Fatalf("FullJitter(%v, %v)(%d) = %v, want in [0, %v)", tt.base, tt.max, attempt, d, ceil)
					}
				}
			}
		})
	}
}

// jitterCeil is min(max, base·2^(attempt-1)), computed in floating point so
// that it cannot overflow the way the code under test must not.
func jitterCeil(base, maxD time.Duration, attempt int) time.Duration {
	exp := float64(max(attempt, 1) - 1)
	if c := float64(base) * math.Pow(2, exp); c < float64(maxD) {
		return time.Duration(c)
	}
	return maxD
}

func TestFullJitterGrows(t *testing.T) {
	// With the cap out of reach, attempt n may wait up to base·2^(n-1): over
	// many draws some wait of attempt 5 exceeds every possible wait of attempt 1.
	b := FullJitter(time.Millisecond, time.Hour)
	longest := time.Duration(0)
	for range 200 {
		longest = max(longest, b(5))
	}
	if longest < time.Millisecond {
		t.Errorf("FullJitter(1ms, 1h)(5) over 200 draws: longest %v, want some above 1ms", longest)
	}
}

func TestFullJitterNoWait(t *testing.T) {
	tests := []struct {
		name      string
		base, max time.Duration
	}{
		{"zero base", 0, time.Minute},
		{"negative base", -time.Second, time.Minute},
		{"zero max", time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := FullJitter(tt.base, tt.max)
			for attempt := range 70 {
				if d := b(attempt); d != 0 {
					t.Fatalf("FullJitter(%v, %v)(%d) = %v, want 0", tt.base, tt.max, attempt, d)
				}
			}
		})
	}
}

func attemptRange(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}
