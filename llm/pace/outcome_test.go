package pace

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestRefusalsOfAnEpisodeWaitOutItsHold: every request refused in one
// episode is told to wait what is left of the lane's hold, so none backs
// off on its own (which the client would make a pause of the whole lane,
// for as long as its backoff drew).
func TestRefusalsOfAnEpisodeWaitOutItsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Adapt: true, Concurrency: 8})
		var ps []*Permit
		for range 3 {
			p, err := l.Acquire(t.Context(), "m", 1)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		time.Sleep(10 * time.Millisecond)
		first := ps[0].Done(Outcome{Result: Refused})
		time.Sleep(100 * time.Millisecond)
		second := ps[1].Done(Outcome{Result: Refused})
		third := ps[2].Done(Outcome{Result: Refused})
		if first <= 0 {
			t.Fatalf("the first refusal's wait = %v, want the lane's hold", first)
		}
		for i, w := range []time.Duration{second, third} {
			if want := first - 100*time.Millisecond; w < want-time.Millisecond || w > want+time.Millisecond {
				t.Errorf("refusal %d of the episode: wait %v, want what is left of the hold, %v", i+2, w, want)
			}
		}
	})
}

// TestRefusalThatDoesNotSayWhich: a 429 that does not say which limit
// refused it is taken for tokens when its request was much bigger than
// the lane's others (a token limit refuses the big ones first), holding
// only that request; for requests otherwise, pausing the lane.
func TestRefusalThatDoesNotSayWhich(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tokens     int
		wantTokens bool
	}{
		{"a big one: tokens", 4000, true},
		{"one of the usual size: requests", 120, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{Adapt: true, Concurrency: 8})
				for range 20 { // the lane's usual: 100 tokens
					p, err := l.Acquire(t.Context(), "m", 100)
					if err != nil {
						t.Fatal(err)
					}
					p.Done(Outcome{Result: Admitted})
				}
				p, err := l.Acquire(t.Context(), "m", tc.tokens)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
				p.Done(Outcome{Result: Refused, Unsure: true})
				ln := l.lane("m")
				ln.mu.Lock()
				defer ln.mu.Unlock()
				paused := ln.until.After(ln.l.now())
				tokPaced := ln.tok.lim != nil
				if tokPaced != tc.wantTokens || paused == tc.wantTokens {
					t.Errorf("token pace set %v, lane paused %v; want token pace %v, pause %v",
						tokPaced, paused, tc.wantTokens, !tc.wantTokens)
				}
			})
		})
	}
}
