package llm

import (
	"math/rand/v2"
	"time"
)

// Backoff returns how long to wait before retry number attempt (1 after the
// first failure). It must be safe for concurrent use.
type Backoff func(attempt int) time.Duration

// FullJitter returns the "full jitter" backoff: a uniform random wait in
// [0, min(max, base·2^(attempt-1))). A zero base or max gives no wait; an
// attempt below 1 counts as 1, and a large one cannot overflow.
func FullJitter(base, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		if base <= 0 || max <= 0 {
			return 0
		}
		ceil := max
		if attempt < 1 {
			attempt = 1
		}
		if shift := attempt - 1; shift < 62 && base <= max>>shift {
			ceil = base << shift
		}
		return rand.N(ceil) // math/rand/v2's top-level functions are safe across goroutines
	}
}
