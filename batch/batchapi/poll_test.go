package batchapi

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestPollEvery(t *testing.T) {
	const s, m = time.Second, time.Minute
	tests := []struct {
		every, ceil time.Duration
		quiet       int
		want        time.Duration
	}{
		{30 * s, 5 * m, 0, 30 * s},
		{30 * s, 5 * m, 1, m},
		{30 * s, 5 * m, 3, 4 * m},
		{30 * s, 5 * m, 4, 5 * m},
		{30 * s, 5 * m, 1000, 5 * m},
		{30 * s, 5 * m, math.MaxInt, 5 * m},
		{30 * s, 5 * m, -3, 30 * s},
		{10 * m, 5 * m, 3, 10 * m}, // a ceiling below every: every always
		{0, 5 * m, 2, 0},
		{-s, 5 * m, 2, 0},
		{time.Duration(math.MaxInt64 / 2), time.Duration(math.MaxInt64), 5, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		if got := PollEvery(tt.every, tt.ceil)(tt.quiet); got != tt.want {
			t.Errorf("PollEvery(%v, %v)(%d) = %v, want %v", tt.every, tt.ceil, tt.quiet, got, tt.want)
		}
	}
}

// The waits between polls while a batch sits unchanged, and after it moves.
func ExamplePollEvery() {
	wait := PollEvery(30*time.Second, 5*time.Minute)
	for quiet := range 6 {
		fmt.Print(wait(quiet), " ")
	}
	fmt.Println("| after a change:", wait(0))
	// Output: 30s 1m0s 2m0s 4m0s 5m0s 5m0s | after a change: 30s
}
