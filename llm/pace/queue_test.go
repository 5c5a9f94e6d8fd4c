package pace

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// queued is a lane paced at 1,000 tokens a second (told 60,000 a minute,
// no margin) whose own second holds sent, sent at t0, and whose queue
// holds a waiting turn of each of sizes, in that order; it has heard from
// the server (see byPhases).
func queued(t0 time.Time, sent float64, sizes ...float64) (*lane, []*turn) {
	l := New(Config{TPM: 60_000, Concurrency: 8})
	l.now = func() time.Time { return t0 }
	ln := l.lane("m")
	ln.tok.heard = true
	if sent > 0 {
		ln.tok.count = sent
		ln.tok.win.sent(t0, sent)
	}
	var ts []*turn
	for _, n := range sizes {
		tu := &turn{tokens: n, seq: ln.queue.next, start: t0, waiting: true}
		ln.queue.next++
		ln.join(tu)
		ts = append(ts, tu)
	}
	return ln, ts
}

// TestBiggestFirst: room that comes back goes to the biggest waiter it
// fits, then to the next that fits what is left; one that fits beside the
// bigger ones goes too, and one that waits at the paces or the gate (not
// for room) is stepped aside for by none.
func TestBiggestFirst(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	now := t0.Add(time.Second) // the 900 sent at t0 has left the second: 1,000 free
	for _, tc := range []struct {
		name  string
		sizes []float64
		fit   []bool
	}{
		{"the smaller waits for the bigger", []float64{300, 800}, []bool{false, true}},
		{"one that fits beside the bigger goes too", []float64{150, 800}, []bool{true, true}},
		{"the next fits what the biggest left", []float64{300, 100, 800}, []bool{false, true, true}},
		{"alike in size: the first come", []float64{600, 600}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, ts := queued(t0, 900, tc.sizes...)
			ln.l.now = func() time.Time { return now }
			for i, tu := range ts {
				if ok, _ := ln.fits(now, tu); ok != tc.fit[i] {
					t.Errorf("%v of %v: fits = %v, want %v", tu.tokens, tc.sizes, ok, tc.fit[i])
				}
			}
		})
	}
	t.Run("not stepped aside for one at the paces", func(t *testing.T) {
		ln, ts := queued(t0, 900, 300, 800)
		ts[1].waiting = false
		if ok, _ := ln.fits(now, ts[0]); !ok {
			t.Error("300 stepped aside for an 800 that waits at the paces, not for room")
		}
	})
}

// TestHeldWhilePassing: the room of a request that fitted and is on its
// way to be sent is held for it until it is sent or gives up.
func TestHeldWhilePassing(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ln, ts := queued(t0, 0, 600, 500)
	ln.pass(ts[0], true)
	ts[0].waiting = false
	if ok, _ := ln.fits(t0, ts[1]); ok {
		t.Error("500 fit beside 600 passing in a second of 1,000")
	}
	ln.leave(ts[0])
	if ok, _ := ln.fits(t0, ts[1]); !ok {
		t.Error("500 did not fit once the 600 gave up")
	}
}

// TestBiggestGoesFirst: through Acquire, two requests wait for the room a
// 900 leaves; both fit it alone, not together: the 800 goes when the 900
// leaves the second, the 300 when the 800 has.
func TestBiggestGoesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 60_000, Concurrency: 8})
		start := time.Now()
		first, err := l.Acquire(t.Context(), "m", 900)
		if err != nil {
			t.Fatal(err)
		}
		first.Done(Outcome{Result: Admitted})
		var mu sync.Mutex
		went := map[int]time.Duration{}
		var wg sync.WaitGroup
		for i, n := range []int{300, 800} {
			wg.Go(func() {
				time.Sleep(time.Duration(i+1) * 100 * time.Millisecond) // the 300 waits first
				p, err := l.Acquire(t.Context(), "m", n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				went[n] = time.Since(start)
				mu.Unlock()
				p.Done(Outcome{Result: Admitted})
			})
		}
		wg.Wait()
		if went[800] != time.Second || went[300] != 2*time.Second {
			t.Errorf("800 went at %v, 300 at %v; want 1s and 2s", went[800], went[300])
		}
	})
}

// TestNotHeldAtThePaces: a request that waits for its turn at the token
// pace (bigger than a second of it, it waits out the debt before it) does
// not hold its room meanwhile: a short one the second has room for goes.
func TestNotHeldAtThePaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 60_000, Concurrency: 8}) // 1,000 a second
		start := time.Now()
		p, err := l.Acquire(t.Context(), "m", 600)
		if err != nil {
			t.Fatal(err)
		}
		p.Done(Outcome{Result: Admitted})
		var wg sync.WaitGroup
		wg.Go(func() {
			if p, err := l.Acquire(t.Context(), "m", 1500); err == nil {
				p.Done(Outcome{Result: Admitted})
			}
		})
		time.Sleep(100 * time.Millisecond)
		p, err = l.Acquire(t.Context(), "m", 300)
		if err != nil {
			t.Fatal(err)
		}
		p.Done(Outcome{Result: Admitted})
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("300 beside 600 sent went at %v, want at once (100ms), the 1,500 at the paces", d)
		}
		wg.Wait()
	})
}

// TestPatience: a request passed by others has its room kept only once
// it has waited eight of the window's periods, a second at least.
func TestPatience(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ln, ts := queued(t0, 0, 900)
	ln.keepIfDue(t0.Add(1500*time.Millisecond), ts[0], 100*time.Millisecond)
	if ln.keeper != nil {
		t.Error("kept after 1.6 s of a one-second window")
	}
	ln.keepIfDue(t0.Add(7900*time.Millisecond), ts[0], 99*time.Millisecond)
	if ln.keeper != nil {
		t.Error("kept before eight seconds")
	}
	ln.keepIfDue(t0.Add(7900*time.Millisecond), ts[0], 100*time.Millisecond)
	if ln.keeper != ts[0] {
		t.Error("not kept after eight seconds")
	}
	// A minute's window: kept after two minutes, not eight.
	ln, ts = queued(t0, 0, 900)
	ln.tok.win.period = time.Minute
	ln.keepIfDue(t0.Add(110*time.Second), ts[0], 5*time.Second)
	if ln.keeper != nil {
		t.Error("kept after 115 s of a minute's window")
	}
	ln.keepIfDue(t0.Add(118*time.Second), ts[0], 2*time.Second)
	if ln.keeper != ts[0] {
		t.Error("not kept after two minutes of a minute's window")
	}
}

// TestLongPromptKeptAtOnce: a long prompt over half a second of the pace
// (no two of its size share one) has its room kept at once, its patience
// not waited; not one under half, nor over a second of it, nor one no
// longer than twice the lane's mean request.
func TestLongPromptKeptAtOnce(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		n, mean float64
		kept    bool
	}{{900, 200, true}, {400, 100, false}, {900, 600, false}, {1500, 200, false}} {
		ln, ts := queued(t0, 0, tc.n)
		ln.req.count, ln.tok.count = 10, 10*tc.mean
		ln.keepIfDue(t0, ts[0], 100*time.Millisecond)
		if kept := ln.keeper == ts[0]; kept != tc.kept {
			t.Errorf("%v tokens, the mean %v, at a pace of 1,000 a second: kept at once %v, want %v", tc.n, tc.mean, kept, tc.kept)
		}
	}
}

// TestGivingUpWakesThoseAside: a waiter that stepped aside for a bigger
// one that fits is woken when that one gives up (its ctx cancelled) before
// it passed, not left to sleep till its timer.
func TestGivingUpWakesThoseAside(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	now := t0.Add(time.Second)
	ln, ts := queued(t0, 900, 300, 800)
	ln.l.now = func() time.Time { return now }
	if ok, _ := ln.fits(now, ts[0]); ok {
		t.Fatal("300 did not step aside for the 800")
	}
	wake := ln.changed
	ts[1].waiting = false // waitWindows returns ctx's error
	ln.leave(ts[1])
	select {
	case <-wake:
	default:
		t.Error("the 800 gave up and the 300 that stepped aside for it was not woken")
	}
	if ok, _ := ln.fits(now, ts[0]); !ok {
		t.Error("300 does not fit once the 800 gave up")
	}
}
