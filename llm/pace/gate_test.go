package pace

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLaneFindsCap runs a lane against a server that admits three
// requests at a time and refuses the fourth at once with a Retry-After of
// a second, and against one that admits twenty requests a second (a fixed
// window) and refuses the rest until the next.
func TestLaneFindsCap(t *testing.T) {
	tests := []struct {
		name    string
		serve   func(now time.Time) (ok bool, done func())
		wantCap int
		most    time.Duration // the run takes at most this
	}{
		{"a cap of 3", capServer(3), 3, 13 * time.Second},      // 300 at 100 ms, three at a time: 10 s
		{"20 a second", windowServer(20), 0, 20 * time.Second}, // 15 s
		// nginx's limit_req with no burst: one of two sent at once is
		// refused with the other in hand, as under a cap of 1. 30 s at
		// best; the climbs are slow under Retry-After: 1 (see worth).
		// Taken for a cap of 1, with probes of 2 sent beside another
		// request and refused, it took 62 s.
		{"a request each 100 ms, answered in 200 ms", spacedServer(100*time.Millisecond, 200*time.Millisecond), 0, 45 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{Concurrency: 16, Adapt: true})
				start := time.Now()
				refused := runLane(t, l, 300, 16, tt.serve)
				took := time.Since(start)
				ln := l.lane("m")
				ln.mu.Lock()
				capFound := ln.gate.policy.cap
				ln.mu.Unlock()
				if capFound != tt.wantCap {
					t.Errorf("cap %d, want %d", capFound, tt.wantCap)
				}
				if took > tt.most || refused > 15 {
					t.Errorf("took %v with %d refusals, want at most %v and 15", took, refused, tt.most)
				}
				if testing.Verbose() {
					t.Logf("took %v with %d refusals, cap %d", took, refused, capFound)
				}
				if rpm, _ := l.Effective("m"); tt.wantCap > 0 && rpm != 0 {
					t.Errorf("the request pace is %v/min under a cap, want none", rpm)
				}
			})
		})
	}
}

// capServer admits n requests at a time, each taking 100 ms.
func capServer(n int) func(time.Time) (bool, func()) {
	var mu sync.Mutex
	inHand := 0
	return func(time.Time) (bool, func()) {
		mu.Lock()
		defer mu.Unlock()
		if inHand >= n {
			return false, nil
		}
		inHand++
		return true, func() {
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			inHand--
			mu.Unlock()
		}
	}
}

// windowServer admits n requests in each whole second, each taking 50 ms.
func windowServer(n int) func(time.Time) (bool, func()) {
	var mu sync.Mutex
	var second int64
	used := 0
	return func(now time.Time) (bool, func()) {
		mu.Lock()
		defer mu.Unlock()
		if s := now.Unix(); s != second {
			second, used = s, 0
		}
		if used >= n {
			return false, nil
		}
		used++
		return true, func() { time.Sleep(50 * time.Millisecond) }
	}
}

// spacedServer admits a request every interval at most, as a leaky bucket
// with no burst does, each taking latency.
func spacedServer(interval, latency time.Duration) func(time.Time) (bool, func()) {
	var mu sync.Mutex
	var last time.Time
	return func(now time.Time) (bool, func()) {
		mu.Lock()
		defer mu.Unlock()
		if !last.IsZero() && now.Sub(last) < interval {
			return false, nil
		}
		last = now
		return true, func() { time.Sleep(latency) }
	}
}

// runLane sends n requests through l with workers, as the client does:
// a refused one waits what Done says (its Retry-After of a second at
// least) and goes again. It returns the refusals.
func runLane(t *testing.T, l *Limiter, n, workers int, serve func(time.Time) (bool, func())) int {
	var mu sync.Mutex
	left, refused := n, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				for {
					p, err := l.Acquire(context.Background(), "m", 0)
					if err != nil {
						t.Error(err)
						return
					}
					ok, done := serve(time.Now())
					if ok {
						done()
						p.Done(Outcome{Result: Admitted})
						break
					}
					mu.Lock()
					refused++
					mu.Unlock()
					time.Sleep(max(p.Done(Outcome{Result: Refused, Hint: time.Second}), time.Second))
				}
			}
		})
	}
	wg.Wait()
	return refused
}

// TestCapHoldsSlotsTaken: requests that took their slots before a cap was
// found, and wait at the pace since, go under the cap, not all at once
// when the pace lets them (see overGate).
func TestCapHoldsSlotsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{RPM: 60, Concurrency: 8, Adapt: true}) // a request a second
		sent := make(chan *Permit, 8)
		for range 4 {
			go func() {
				p, err := l.Acquire(context.Background(), "m", 0)
				if err != nil {
					t.Error(err)
				}
				sent <- p
			}()
		}
		first := <-sent // the others hold slots (8 allowed) and wait at the pace
		synctest.Wait()
		ln := l.lane("m")
		ln.mu.Lock()
		ln.gate.policy.cap, ln.gate.policy.since = 1, time.Now() // a cap of 1 found now,
		ln.gate.policy.patience = capMaxPatience                 // not probed higher in this test
		ln.wake()
		ln.mu.Unlock()
		time.Sleep(5 * time.Second) // the pace lets all three go meanwhile
		synctest.Wait()
		if n := len(sent); n > 0 {
			t.Fatalf("%d more sent with the first still in flight under a cap of 1", n)
		}
		first.Done(Outcome{Result: Admitted})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(sent); n != 1 {
			t.Fatalf("%d sent once the first was answered, want 1", n)
		}
		for range 2 {
			(<-sent).Done(Outcome{Result: Admitted})
		}
		(<-sent).Done(Outcome{Result: Admitted})
	})
}

// A cap found sets the request estimator aside and starts one afresh; the
// cap dropped as a mistake brings it back at its pace, the refusals a
// rate limit's after all, where the fresh one would send all of -j at
// once (see capChanged).
func TestCapDroppedBringsPaceBack(t *testing.T) {
	l := New(Config{Concurrency: 16, Adapt: true})
	ln := l.lane("m")
	ln.mu.Lock()
	defer ln.mu.Unlock()
	now := l.now()
	ln.req.est.rate, ln.req.est.good = 8, 8 // 480/min, held
	ln.req.sync(now, 1)
	ln.gate.policy.cap = 2
	ln.capChanged(now, 0, true)
	if r := ln.req.est.rate; !math.IsInf(r, 1) || ln.req.est.good != 0 {
		t.Fatalf("under the cap found: pace %v, good %v; want none, 0", r, ln.req.est.good)
	}
	turned := &turn{} // paid at no pace, turned back by the cap's gate (see overGate)
	ln.mu.Unlock()
	if !ln.stillPaid(turned, true) {
		t.Fatal("a turn paid under the cap does not stand")
	}
	ln.mu.Lock()
	later := now.Add(3 * time.Second)
	ln.gate.policy.cap = 0 // judge found it a mistake
	ln.capChanged(later, 2, false)
	ln.mu.Unlock()
	if ln.stillPaid(turned, true) {
		t.Error("a turn paid at no pace stands once the pace is back: it would go at once")
	}
	if !ln.stillPaid(turned, true) {
		t.Error("a turn paid again at the pace brought back does not stand")
	}
	ln.mu.Lock()
	if e := ln.req.est; e.rate != 8 || e.good != 8 || !e.ep.start.Equal(later) {
		t.Errorf("the cap dropped: pace %v, good %v, epoch from %v; want 8, 8, from %v", e.rate, e.good, e.ep.start, later)
	}
	if ln.req.lim == nil || float64(ln.req.lim.Limit()) != 8 {
		t.Errorf("the rate limiter not back at the pace: %v", ln.req.lim)
	}
	if ln.gate.before != nil {
		t.Error("the estimator set aside is still held")
	}
}

// TestCapDroppedInTheOpening: a cap of one found in the opening, before
// any pace was found, and dropped as a mistake, was a rate limit with no
// burst (it refuses two sent together, as a cap of one does): the pace
// brought back climbs as a paced opening's, at the doubling step and on
// half the answers, where it crept up a twentieth at a time (nginx's 10 a
// second with no burst: 486/min to 524/min in 6.6 s). One that had held
// a pace climbs as it did.
func TestCapDroppedInTheOpening(t *testing.T) {
	for _, held := range []bool{false, true} {
		l := New(Config{Concurrency: 16, Adapt: true})
		ln := l.lane("m")
		ln.mu.Lock()
		now := l.now()
		ln.req.est.rate = 8
		if held {
			ln.req.est.good = 8
		}
		ln.req.sync(now, 1)
		ln.gate.policy.cap = 1
		ln.capChanged(now, 0, true)
		ln.gate.policy.cap = 0
		ln.capChanged(now.Add(2*time.Second), 1, false)
		e := ln.req.est
		ln.mu.Unlock()
		if opened := e.factor() >= 1.4 && e.stepAnswers() < minAnswers; opened == held {
			t.Errorf("held %v: the cap dropped, the climb steps by %.2f on %d answers", held, e.factor(), e.stepAnswers())
		}
	}
}
