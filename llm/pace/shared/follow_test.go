package shared

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
	"github.com/llmbatch/llmbatch/llm/pace"
)

// TestFollowersDrawAtTheLeadersPace checks that the process that leads a
// lane publishes its pace and that the others draw at it, whatever their
// own: at the leader's 10 a second, two followers pacing themselves at
// 100 send 10 or so a second between them, not 200.
func TestFollowersDrawAtTheLeadersPace(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	lead := NewClient(open(t, srv, "lead"), "u", testKey, nil)
	if err := lead.Take(ctx, "m", 10, 0, 1); err != nil { // beats first: leads, and publishes 10/s
		t.Fatal(err)
	}
	if _, _, follow := lead.Pace("m"); follow {
		t.Fatal("the leader follows")
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, id := range []string{"f1", "f2"} {
		c := NewClient(open(t, srv, id), "u", testKey, nil)
		c.Paused(ctx, "m") // reads the key's pace
		if rps, _, follow := c.Pace("m"); !follow || rps != 10 {
			t.Fatalf("a follower's Pace() = %v, %v; want the leader's 10/s", rps, follow)
		}
		wg.Go(func() {
			for time.Since(start) < time.Second {
				if err := c.Take(ctx, "m", 100, 0, 1); err != nil {
					t.Error(err)
					return
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	if n := sent.Load(); n > 14 {
		t.Errorf("two followers at their own 100/s sent %d in a second, want the leader's 10 or so between them", n)
	}
}

// TestLimiterFollowsTheKeysPace checks, through real limiters, that a
// process told nothing takes up the pace of the one leading the key (told
// 600 a minute, paced 3%% under): its own estimator is kept at it.
func TestLimiterFollowsTheKeysPace(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	told := pace.New(pace.Config{RPM: 600, Adapt: true, Margin: 0.03,
		Shared: NewClient(open(t, srv, "told"), "u", testKey, nil)})
	untold := pace.New(pace.Config{Adapt: true, Shared: NewClient(open(t, srv, "untold"), "u", testKey, nil)})
	for _, l := range []*pace.Limiter{told, untold} {
		p, err := l.Acquire(ctx, "m", 10)
		if err != nil {
			t.Fatal(err)
		}
		p.Done(pace.Outcome{Result: pace.Admitted})
	}
	want, _ := told.Effective("m")
	if got, _ := untold.Effective("m"); want == 0 || got != want {
		t.Errorf("the untold process paces at %v a minute, want the leader's %v", got, want)
	}
}
