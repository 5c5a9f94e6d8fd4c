package pace

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
)

// secondAt is a token quantity paced at 1,000 a second that sent, at each
// offset from t0, the units given, and has heard from the server (see
// byPhases).
func secondAt(t0 time.Time, sends map[time.Duration]float64, order []time.Duration) *quantity {
	q := &quantity{lim: rate.NewLimiter(1000, 1000), heard: true}
	for _, d := range order {
		q.count += sends[d]
		q.win.sent(t0.Add(d), q.count)
	}
	return q
}

func TestInSecond(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	// 300 at 0 s, 300 at 0.2 s, 300 at 0.4 s: 900 of 1,000 in the second.
	order := []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond}
	sends := map[time.Duration]float64{0: 300, 200 * time.Millisecond: 300, 400 * time.Millisecond: 300}
	now := t0.Add(500 * time.Millisecond)
	for _, tc := range []struct {
		name     string
		n, kept  float64
		ok       bool
		wait     time.Duration
		refill   float64
		noPace   bool
		fixedWin bool
	}{
		{name: "fits what the second has left", n: 100, ok: true},
		{name: "waits for the first send to leave the second", n: 350, wait: 500 * time.Millisecond},
		{name: "two of them: for the second send", n: 650, wait: 700 * time.Millisecond},
		// Up to two seconds of the pace: into a second empty of others
		// (the 300 sent at 0.4 s leaves at 1.4 s), and a short one waits
		// with it while its room is kept; bigger: the rate.Limiter's.
		{name: "bigger than a second of the pace: into an empty second", n: 1500, wait: 900 * time.Millisecond},
		{name: "a short one waits with a kept one bigger than a second", n: 50, kept: 1500, wait: 900 * time.Millisecond},
		{name: "over two seconds of the pace: left to the rate.Limiter", n: 2500, ok: true},
		// The kept request (400) fits at 1 s, when the first 300 leave,
		// with 0 spare: a short one must not take it, though 100 is free now.
		{name: "a short one does not take the room kept", n: 50, kept: 400, wait: 500 * time.Millisecond},
		// Kept 200 fits at 1 s with 200 spare: 50 now does not delay it.
		{name: "a short one takes what the kept one will not need", n: 50, kept: 200, ok: true},
		// Kept 50 fits now, 80 beside it does not: it waits until both
		// would (the first send leaves), not a millisecond at a time.
		{name: "the kept one fits already: until both would", n: 80, kept: 50, wait: 500 * time.Millisecond},
		{name: "a bucket's server: the rate.Limiter is its kind", n: 350, ok: true, refill: 1000},
		{name: "a fixed window's server: the tracker follows it", n: 350, ok: true, fixedWin: true},
		{name: "no pace", n: 350, ok: true, noPace: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := secondAt(t0, sends, order)
			q.win.refill, q.win.wall = tc.refill, tc.fixedWin
			if tc.noPace {
				q.lim = nil
			}
			ok, wait := q.inSecond(now, tc.n, 0, tc.kept)
			if ok != tc.ok || (!ok && wait != tc.wait) {
				t.Errorf("inSecond(%v, kept %v) = %v, %v; want %v, %v", tc.n, tc.kept, ok, wait, tc.ok, tc.wait)
			}
		})
	}
}

// TestOwnSecondTakesNoTurn: a request the own second keeps to the pace
// does not wait for the rate.Limiter too (which starts empty, and made a
// second's sends lumped by long prompts fall a tenth short of the pace);
// its turn is a debt that one longer than a second of the pace waits out.
func TestOwnSecondTakesNoTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 60_000, Concurrency: 8}) // 1,000 a second
		start := time.Now()
		went := func(n int) time.Duration {
			p, err := l.Acquire(t.Context(), "m", n)
			if err != nil {
				t.Fatal(err)
			}
			p.Done(Outcome{Result: Admitted})
			return time.Since(start)
		}
		if d := went(600); d != 0 {
			t.Errorf("600 of a second's 1,000 went after %v, want at once", d)
		}
		if d := went(500); d != time.Second {
			t.Errorf("500 more went after %v, want at 1 s, when the 600 left the second", d)
		}
		// 1,100 taken by 1 s as debt: 1,500 (over a second of the pace)
		// waits for the rate.Limiter, 1.1 s of debt past 1 s.
		if d := went(1500); d < 2*time.Second {
			t.Errorf("1,500 went after %v, want after the debt, 2.1 s or later", d)
		}
	})
}

// TestPressedOnlyByTheSecond: a request the own second holds back shows
// the token pace was reached only when the second's own sends hold it, not
// the room kept for a long prompt, nor while the requests' window holds
// the lane (a pace raised then tests nothing).
func TestPressedOnlyByTheSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 60_000, RPM: 600, Concurrency: 8}) // 1,000 tokens, 10 requests a second
		ln := l.lane("m")
		ln.mu.Lock()
		defer ln.mu.Unlock()
		ln.keeper = &turn{tokens: 900, start: time.Now()}
		if ok, _ := ln.fits(time.Now(), &turn{tokens: 200, start: time.Now()}); ok {
			t.Fatal("200 beside 900 kept of a second's 1,000 fit")
		}
		if ln.tok.est.ep.pressed {
			t.Error("pressed by the room kept, the second empty")
		}
		ln.keeper = nil
		ln.tok.count = 900
		ln.tok.win.sent(time.Now(), ln.tok.count)
		if ok, _ := ln.fits(time.Now(), &turn{tokens: 200, start: time.Now()}); ok {
			t.Fatal("200 beside 900 sent fit a second's 1,000")
		}
		if !ln.tok.est.ep.pressed {
			t.Error("not pressed by the second's own 900")
		}
		ln.tok.est.ep.pressed = false
		ln.req.win.read(Reading{Told: true, Limit: 10, Left: 0, Reset: time.Second}, time.Now(), time.Now(), ln.req.count)
		if ok, _ := ln.fits(time.Now(), &turn{tokens: 200, start: time.Now()}); ok {
			t.Fatal("fit a spent requests' window")
		}
		if ln.tok.est.ep.pressed {
			t.Error("pressed while the requests' window held the lane")
		}
	})
}

// TestOwnSecondSpansTheGuard: once readings have told the tracker a
// sliding window of a second, the own second keeps a send for the second
// and the guard the tracker allows (and holds the pace's worth of that
// time), so that a long prompt's room comes back to both at once, not to
// the own second a guard early, when nothing the tracker would let go
// could take it. A window whose resets reach past its length (a sliding
// counter's, which weighs the window before) keeps the second.
func TestOwnSecondSpansTheGuard(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	q := secondAt(t0, map[time.Duration]float64{0: 600}, []time.Duration{0})
	if ok, _ := q.inSecond(t0.Add(time.Second), 500, 0, 0); !ok {
		t.Fatal("no window told: 500 did not fit a second after 600 went")
	}
	q.win.length, q.win.period = time.Second, 2*time.Second // resets past the length: a counter's
	if ok, _ := q.inSecond(t0.Add(time.Second), 500, 0, 0); !ok {
		t.Error("a window whose resets reach past its length: 500 did not fit a second after 600 went")
	}
	q.win.period = time.Second // a sliding window of a second: guard 20 ms
	ok, wait := q.inSecond(t0.Add(time.Second), 500, 0, 0)
	if ok || wait != 20*time.Millisecond {
		t.Errorf("at 1 s: inSecond(500) = %v, %v; want false, 20ms (the tracker's guard)", ok, wait)
	}
	if ok, _ := q.inSecond(t0.Add(1020*time.Millisecond), 500, 0, 0); !ok {
		t.Error("at 1.02 s: 500 did not fit")
	}
	if got := q.secondsWorth(); got != 1020 {
		t.Errorf("secondsWorth = %v, want 1020 (1,000 a second over 1.02 s)", got)
	}
}

// TestInSecondHeld: units that go now before a request count as sent.
func TestInSecondHeld(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	q := secondAt(t0, map[time.Duration]float64{0: 300}, []time.Duration{0})
	now := t0.Add(500 * time.Millisecond)
	if ok, _ := q.inSecond(now, 400, 0, 0); !ok {
		t.Fatal("400 beside 300 did not fit a second of 1,000")
	}
	ok, wait := q.inSecond(now, 400, 500, 0)
	if ok || wait != 500*time.Millisecond {
		t.Errorf("400 beside 300 sent and 500 held = %v, %v; want false, 500ms (when the 300 leaves)", ok, wait)
	}
}

// TestDebtBeyondASecond: a request the own second has room for does not
// wait for the rate.Limiter while its debt is within two seconds' worth.
// The limiter starts empty, so the first second's sends leave it a
// second's worth in debt, and from then on, kept to the pace by the own
// second, it hovers there: the timing of sends within a second took it
// past a second's worth now and then, and a long prompt the second had
// room for waited, in take, until the limiter held all of it, while short
// ones took the room (told a sliding second's limit, 0.2 s a long prompt).
func TestDebtBeyondASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 60_000, Concurrency: 8}) // 1,000 a second
		start := time.Now()
		ln := l.lane("m")
		ln.mu.Lock()
		ln.tok.lim.ReserveN(time.Now(), 1000) // a second's worth in debt, none of it in the own second
		ln.mu.Unlock()
		p, err := l.Acquire(t.Context(), "m", 300)
		if err != nil {
			t.Fatal(err)
		}
		p.Done(Outcome{Result: Admitted})
		if d := time.Since(start); d != 0 {
			t.Errorf("300 went after %v, want at once: the second is empty, the debt within two seconds' worth", d)
		}
	})
}

// TestToldMinuteHoldsDebts: told 12,000 tokens a minute (paced at 11,650
// by a 3% margin) with answers slower than the minute, so that no reading
// comes back, no minute of sends holds more than the told limit less the
// margin. The pace alone let a long prompt go as soon as the limiter held
// its burst, its rest a debt: the first 57 s saw 13.7k, as the zoo's told
// minute cells did (one refusal in 120).
func TestToldMinuteHoldsDebts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 12_000, Margin: 0.03, Concurrency: 32, Adapt: true})
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		var sizes []int
		next := 0
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= 64 {
						return
					}
					n := 20 + i*53%90
					if i%8 == 7 {
						n = 2500 + i*37%1000
					}
					p, err := l.Acquire(t.Context(), "m", n)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					at, sizes = append(at, time.Since(start)), append(sizes, n)
					mu.Unlock()
					time.Sleep(90 * time.Second)
					p.Done(Outcome{Result: Admitted})
				}
			})
		}
		wg.Wait()
		most := 0
		for i := range at {
			sum := 0
			for j := range at {
				if at[j] <= at[i] && at[j] > at[i]-time.Minute {
					sum += sizes[j]
				}
			}
			most = max(most, sum)
		}
		if most > 11_650 {
			t.Errorf("a minute of sends held %d tokens; want 11,650 at most", most)
		}
	})
}
