package shared

import (
	"context"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
)

// TestFollowersAwaitTheLeadersFirstPace checks that, told nothing, a
// process that follows a young lane sends nothing until the leader has
// found a pace, which the leader meanwhile counts as its own alone.
func TestFollowersAwaitTheLeadersFirstPace(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	lead := NewClient(open(t, srv, "lead"), "u", testKey, nil)
	if err := lead.Take(ctx, "m", 0, 0, 1); err != nil { // beats first: leads; no pace to publish
		t.Fatal(err)
	}
	follow := NewClient(open(t, srv, "follow"), "u", testKey, nil)
	done := make(chan time.Time, 1)
	go func() {
		if err := follow.Take(ctx, "m", 0, 0, 1); err != nil {
			t.Error(err)
		}
		done <- time.Now()
	}()
	time.Sleep(400 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a follower told nothing sent before the leader knew a pace")
	default:
	}
	lead.mu.Lock()
	lead.lanes["m"].beat = time.Time{} // the next take beats, and counts the follower
	lead.mu.Unlock()
	if err := lead.Take(ctx, "m", 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	if n := lead.Live("m"); n != 1 {
		t.Errorf("the leader's Live() while the other waits for its pace = %d, want 1", n)
	}
	published := time.Now()
	if err := lead.Take(ctx, "m", 20, 0, 1); err != nil { // its first pace: 20 a second, published
		t.Fatal(err)
	}
	if n := lead.Live("m"); n != 2 {
		t.Errorf("the leader's Live() once its pace is known = %d, want 2", n)
	}
	select {
	case at := <-done:
		if d := at.Sub(published); d > 2*time.Second {
			t.Errorf("the follower sent %v after the leader's pace was published, want at once", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower still waits after the leader published its pace")
	}
}

// TestFollowersAwaitNoLonger checks that a follower whose lane is past its
// first seconds goes on its own when no pace was found.
func TestFollowersAwaitNoLonger(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	lead := NewClient(open(t, srv, "lead"), "u", testKey, nil)
	late := NewClient(open(t, srv, "late"), "u", testKey, nil)
	late.lane("m").born = time.Now().Add(-young) // past its first seconds
	if err := lead.Take(ctx, "m", 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := late.Take(wctx, "m", 0, 0, 1); err != nil {
		t.Errorf("a follower past its lane's first seconds, waiting for a pace nobody found: Take() = %v, want it drawn at once", err)
	}
}
