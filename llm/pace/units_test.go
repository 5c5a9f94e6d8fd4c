package pace

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestWindowOfNoUnitSaid: a window whose headers do not say what it
// counts is taken for the token window once its use has followed the
// lane's tokens, not its requests, three times; one that follows its
// requests stays the request window.
func TestWindowOfNoUnitSaid(t *testing.T) {
	for _, tc := range []struct {
		name       string
		countsToks bool
	}{
		{"it counts tokens", true},
		{"it counts requests", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{Adapt: true, Concurrency: 32})
				var reqs, toks int
				for range 12 {
					p, err := l.Acquire(t.Context(), "m", 300)
					if err != nil {
						t.Fatal(err)
					}
					reqs, toks = reqs+1, toks+300
					used := reqs
					if tc.countsToks {
						used = toks
					}
					time.Sleep(20 * time.Millisecond)
					p.Done(Outcome{Result: Admitted, Requests: Reading{Told: true, Limit: 100000, Left: 100000 - used,
						Reset: time.Second, Guessed: true}})
				}
				ln := l.lane("m")
				ln.mu.Lock()
				defer ln.mu.Unlock()
				if gotToks := ln.tok.win.limit > 0 && ln.req.win.limit == 0; gotToks != tc.countsToks {
					t.Errorf("token window %d, request window %d: want it read as tokens: %v",
						ln.tok.win.limit, ln.req.win.limit, tc.countsToks)
				}
			})
		})
	}
}
