package shared

import (
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
)

// TestFollowersAwaitTheLeadersFirstPace checks that, told nothing, a
// process that follows a young lane sends nothing until the leader has
// found a pace, which the leader meanwhile counts as its own alone; and
// that one whose lane is past its first seconds goes on its own.
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

	late := NewClient(open(t, srv, "late"), "u", testKey, nil)
	late.lane("other").born = time.Now().Add(-young) // past its first seconds
	if err := lead.Take(ctx, "other", 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := late.Take(ctx, "other", 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a follower past its lane's first seconds waited %v for a pace nobody found, want none", d)
	}
}
