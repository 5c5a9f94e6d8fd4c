package llm_test

import (
	"fmt"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// Retry number n waits a random time below base·2^(n-1), and never as long
// as the cap.
func ExampleFullJitter() {
	backoff := llm.FullJitter(time.Second, 10*time.Second)
	for attempt := 1; attempt <= 6; attempt++ {
		ceil := min(10*time.Second, time.Second<<(attempt-1))
		d := backoff(attempt)
		fmt.Printf("retry %d waits less than %v: %v\n", attempt, ceil, d >= 0 && d < ceil)
	}
	// Output:
	// retry 1 waits less than 1s: true
	// retry 2 waits less than 2s: true
	// retry 3 waits less than 4s: true
	// retry 4 waits less than 8s: true
	// retry 5 waits less than 10s: true
	// retry 6 waits less than 10s: true
}
