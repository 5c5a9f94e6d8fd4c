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
