package pace

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPaceRaisedIsFeltAtOnce: requests waiting at a slow pace go at the
// new one as soon as it rises, not at the turns they would have taken
// at the old (a queue of debts taken ahead would hold them there).
func TestPaceRaisedIsFeltAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(60, 0) // one a second
		var wg sync.WaitGroup
		start := time.Now()
		var mu sync.Mutex
		var last time.Duration
		for range 20 {
			wg.Go(func() {
				if err := wait(l, t.Context(), 1); err != nil {
					t.Error(err)
				}
				mu.Lock()
				last = max(last, time.Since(start))
				mu.Unlock()
			})
		}
		time.Sleep(2500 * time.Millisecond)
		ln := l.lane("")
		ln.mu.Lock()
		ln.req.est.rate, ln.req.est.ceil = 100, 100
		ln.logged("rpm", &ln.req, ln.l.now(), 1)
		ln.wake()
		ln.mu.Unlock()
		wg.Wait()
		// 3 went by 2.5 s at one a second; the other 17 at 100 a second.
		if last > 3*time.Second {
			t.Errorf("the last of 20 went at %v, want within half a second of the raise at 2.5s", last)
		}
	})
}
