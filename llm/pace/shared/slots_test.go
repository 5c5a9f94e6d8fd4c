package shared

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
)

// TestHoldCapsAcrossClients checks that three processes' clients, each
// with six requests wanting a slot, hold at most the shared cap of three
// at once between them, and all get through.
func TestHoldCapsAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	var in, most, done atomic.Int64
	var wg sync.WaitGroup
	for i := range 3 {
		c := NewClient(open(t, srv, "p"+string(rune('a'+i))), "u", testKey, nil)
		c.CapInFlight(3)
		for range 6 {
			wg.Go(func() {
				release, err := c.Hold(t.Context(), "m")
				if err != nil {
					t.Error(err)
					return
				}
				n := in.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				in.Add(-1)
				release()
				release() // only the first counts
				done.Add(1)
			})
		}
	}
	wg.Wait()
	if m, d := most.Load(), done.Load(); m > 3 || m < 2 || d != 18 {
		t.Errorf("%d held at most at once and %d through, want 3 (the cap) and 18", m, d)
	}
}

// TestHoldRenewsAndLapses checks that a lease held longer than its
// lifetime is renewed (the slot stays taken), and that one nobody renews
// any more (its process killed) lapses, so the slot comes back.
func TestHoldRenewsAndLapses(t *testing.T) {
	srv := redistest.Start(t)
	storeA := open(t, srv, "a")
	a := NewClient(storeA, "u", testKey, nil)
	b := NewClient(open(t, srv, "b"), "u", testKey, nil)
	for _, c := range []*Client{a, b} {
		c.CapInFlight(1)
		c.slots.ttl = 300 * time.Millisecond
	}
	ctx := t.Context()
	release, _ := a.Hold(ctx, "m")
	time.Sleep(time.Second) // over three lifetimes: renewed meanwhile
	if got := b.hold(ctx, "m"); got != nil {
		t.Fatal("a second process got the only slot while the first held it, renewed")
	}
	// The first process dies: nothing of it reaches Redis any more (its
	// connection closed; stopping its renewal timer raced with a renewal
	// under way, which armed it again), and its lease lapses.
	storeA.Close()
	time.Sleep(500 * time.Millisecond)
	got := b.hold(ctx, "m")
	if got == nil {
		t.Fatal("the slot of a process that stopped renewing never came back")
	}
	got()
	release()
}

// TestHoldRedisAway checks that with Redis away a process holds at most
// its share of the slots (the cap over the live processes), and never fails.
func TestHoldRedisAway(t *testing.T) {
	srv := redistest.Start(t)
	a := NewClient(open(t, srv, "a"), "u", testKey, nil)
	a.CapInFlight(4)
	a.mu.Lock()
	a.lane("m").live = 2
	a.mu.Unlock()
	srv.Stop()
	var rels []func()
	for range 2 {
		rel, err := a.Hold(t.Context(), "m")
		if err != nil {
			t.Fatal(err)
		}
		rels = append(rels, rel)
	}
	if a.hold(t.Context(), "m") != nil {
		t.Error("with Redis away a process of two held more than half the 4 slots")
	}
	rels[0]()
	if a.hold(t.Context(), "m") == nil {
		t.Error("a slot given back with Redis away could not be held again")
	}
}
