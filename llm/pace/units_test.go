package pace

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestWindowOfNoUnitSaid: a window whose headers do not say what it
// counts is taken for the token window once its use has grown with the
// lane's tokens, not its requests, three times; one that grows with its
// requests stays the request window, and so does a GCRA's of 100 per
// 10 s told GitHub's way (its remaining a request or none, its window's
// length not said), whose use of 100 is far more than a second's 8
// requests of the lane, though far under their 400 tokens.
func TestWindowOfNoUnitSaid(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tokens     int           // a request's
		every      time.Duration // between requests
		limit      int
		used       func(reqs, toks int) int
		countsToks bool
	}{
		{"it counts tokens", 300, 20 * time.Millisecond, 100000, func(_, toks int) int { return toks }, true},
		{"it counts requests", 300, 20 * time.Millisecond, 100000, func(reqs, _ int) int { return reqs }, false},
		{"a GCRA's, told GitHub's way", 50, 125 * time.Millisecond, 100, func(reqs, _ int) int { return 99 + reqs%2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{Adapt: true, Concurrency: 32})
				var reqs, toks int
				for range 24 {
					p, err := l.Acquire(t.Context(), "m", tc.tokens)
					if err != nil {
						t.Fatal(err)
					}
					reqs, toks = reqs+1, toks+tc.tokens
					time.Sleep(tc.every)
					p.Done(Outcome{Result: Admitted, Requests: Reading{Told: true, Limit: tc.limit, Left: tc.limit - tc.used(reqs, toks),
						Reset: 100 * time.Millisecond, Guessed: true}})
				}
				ln := l.lane("m")
				ln.mu.Lock()
				defer ln.mu.Unlock()
				if ln.units.tokens != tc.countsToks {
					t.Errorf("votes %d for tokens, %d for requests: want it taken for tokens: %v",
						ln.units.tok, ln.units.req, tc.countsToks)
				}
			})
		})
	}
}
