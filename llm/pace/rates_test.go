package pace

import (
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPaceRaisedIsFeltAtOnce: requests waiting at a slow pace go at the
// new one as soon as it rises, not at the turns they would have taken
// at the old (a queue of debts taken ahead would hold them there).
func TestPaceRaisedIsFeltAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(60, 0) // one a second
		var wg sync.WaitGroup
		start := time.Now()
		var mu sync.Mutex
		var last time.Duration
		for range 20 {
			wg.Go(func() {
				if err := wait(l, t.Context(), 1); err != nil {
					t.Error(err)
				}
				mu.Lock()
				last = max(last, time.Since(start))
				mu.Unlock()
			})
		}
		time.Sleep(2500 * time.Millisecond)
		ln := l.lane("")
		ln.mu.Lock()
		ln.req.est.rate, ln.req.est.ceil = 100, 100
		ln.logged("rpm", &ln.req, ln.l.now(), 1)
		ln.wake()
		ln.mu.Unlock()
		wg.Wait()
		// 3 went by 2.5 s at one a second; the other 17 at 100 a second.
		if last > 3*time.Second {
			t.Errorf("the last of 20 went at %v, want within half a second of the raise at 2.5s", last)
		}
	})
}

// TestToldWindowOfAMinute: told a token limit a minute, once the server's
// headers show a window of that limit and length that keeps no unit past
// it, requests go as the tracker finds room: against a sliding minute, the
// first minute's 12,000 take its first second. With a second's worth as
// its burst, the pace let one 3,000 go every 15 s, and its debts taken
// ahead held room the window had (told token cells of a minute: 1.09-1.30x);
// the own second held short ones to 200 a second. A window whose resets
// reach past its length (a sliding counter) keeps the second's worth.
func TestToldWindowOfAMinute(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n, count    int
		reset       time.Duration // the readings' reset, from when their request went
		least, most time.Duration // when the last went
	}{
		// The first waits for a second's worth (the pace starts empty).
		{"long prompts, a sliding minute", 3000, 4, time.Minute, 0, 1100 * time.Millisecond},
		{"short prompts, a sliding minute", 150, 60, time.Minute, 0, 1100 * time.Millisecond},
		{"long prompts, a counter's reset past the minute", 3000, 4, 90 * time.Second, 30 * time.Second, time.Hour},
		{"short prompts, a counter's reset past the minute", 150, 60, 90 * time.Second, 30 * time.Second, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{TPM: 12_000, Concurrency: 8})
				start := time.Now()
				used := 0
				var last time.Duration
				for i := range tc.count {
					p, err := l.Acquire(t.Context(), "m", tc.n)
					if err != nil {
						t.Fatal(err)
					}
					last = time.Since(start)
					used += tc.n
					p.Done(Outcome{Result: Admitted, TokenWindow: Reading{Told: true, Limit: 12_000, Left: 12_000 - used, Reset: tc.reset}})
					if i == 0 {
						time.Sleep(100 * time.Millisecond) // the first answer's headers are read
					}
				}
				if last < tc.least || last > tc.most {
					t.Errorf("the last of %d x %d of a told 12,000 a minute went at %v, want between %v and %v", tc.count, tc.n, last, tc.least, tc.most)
				}
			})
		})
	}
}

// TestToldRequestWindowOfAMinute: the same for a told request limit: once
// the headers show a minute of 60 requests that keeps none past it, ten
// go as soon as they are asked for, not one a second. Headers of another
// window (5,000 an hour) leave the told minute to the pace.
func TestToldRequestWindowOfAMinute(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit       int
		reset       time.Duration
		least, most time.Duration
	}{
		{"the told minute shown", 60, time.Minute, 0, 200 * time.Millisecond},
		{"an hour's window shown", 5000, time.Hour, 9 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{RPM: 60, Concurrency: 8})
				start := time.Now()
				for i := range 10 {
					p, err := l.Acquire(t.Context(), "m", 0)
					if err != nil {
						t.Fatal(err)
					}
					p.Done(Outcome{Result: Admitted, Requests: Reading{Told: true, Limit: tc.limit, Left: tc.limit - 1 - i, Reset: tc.reset}})
					if i == 0 {
						time.Sleep(100 * time.Millisecond) // the first answer's headers are read
					}
				}
				if d := time.Since(start); d < tc.least || d > tc.most {
					t.Errorf("10 requests of a told 60 a minute took %v, want between %v and %v", d, tc.least, tc.most)
				}
			})
		})
	}
}

// TestToldWindowFilledOnce: the window's worth is put in the pace once,
// when the window is shown; a pace moved since (cut, then climbing back,
// from under half of it too) or a reading of another window between keeps
// what its limiter holds, so that no step up lets a window's worth go
// again. (A cut under half and the climb back, or Kong's second and minute
// taking turns as the one that binds, had refilled it.)
func TestToldWindowFilledOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between func(q *quantity, now time.Time)
	}{
		{"cut a tenth", func(q *quantity, now time.Time) { q.est.rate = 90; q.sync(now, 0) }},
		{"cut to under half", func(q *quantity, now time.Time) { q.est.rate = 40; q.sync(now, 0) }},
		{"another window's limit read", func(q *quantity, now time.Time) { q.win.limit = 100; q.sync(now, 0); q.win.limit = 6000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			q := &quantity{est: newEstimator(100, true, now)}
			q.win.told, q.win.limit, q.win.period = 100, 6000, time.Minute
			q.sync(now, 0) // a second's worth, empty
			q.sync(now, 0) // the window shown: its worth, full
			if got := q.lim.TokensAt(now); got < 5999 {
				t.Fatalf("shown a told minute of 6,000, the pace holds %v, want 6,000", got)
			}
			q.lim.ReserveN(now, q.lim.Burst()) // spent
			tc.between(q, now)
			q.est.rate = 100
			q.sync(now, 0)
			if got := q.lim.TokensAt(now); got > 1 {
				t.Errorf("a pace moved and raised again holds %v, want what it held (0)", got)
			}
			if q.lim.Burst() != 6000 {
				t.Errorf("burst %d, want the window's 6,000", q.lim.Burst())
			}
		})
	}
}

// TestToldWindowCutBites: a refusal cuts the pace, and the limiter holds
// no more of the told window's worth than a second of the pace cut: the
// refusal says the window is spent, whatever the tracker took it to have
// left (no headers came with it). It had held 10,500 of the 12,000, and
// 12 x 300 went in the instant after the hold.
func TestToldWindowCutBites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 12_000, Concurrency: 8, Adapt: true})
		p, _ := l.Acquire(t.Context(), "m", 300)
		p.Done(Outcome{Result: Admitted, TokenWindow: Reading{Told: true, Limit: 12_000, Left: 11_700, Reset: time.Minute}})
		time.Sleep(100 * time.Millisecond) // the window shown: its worth, full
		p, _ = l.Acquire(t.Context(), "m", 300)
		hold := p.Done(Outcome{Result: Refused, Tokens: true, Hint: time.Second})
		refused := time.Now()
		for range 12 {
			p, err := l.Acquire(t.Context(), "m", 300)
			if err != nil {
				t.Fatal(err)
			}
			p.Done(Outcome{Result: Admitted})
		}
		// At the pace cut to 180 a second, a second's worth at once.
		if d := time.Since(refused); d < 10*time.Second {
			t.Errorf("after a refusal (hold %v), 12 x 300 of a told 12,000 a minute went in %v, want the pace cut: 15 s or so", hold, d)
		}
	})
}

// TestOwnSecondDebtTakenWhenSent: the turn at the token pace of a request
// the own second keeps to it is taken as it is sent, not before: one sent
// round again (its room taken meanwhile) leaves the rate.Limiter as it
// was, and holds back none of those sent.
func TestOwnSecondDebtTakenWhenSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{TPM: 60_000, Concurrency: 8}) // 1,000 a second
		ln := l.lane("m")
		now := time.Now()
		tu := &turn{tokens: 500, seq: ln.queue.next, start: now}
		ln.queue.next++
		ln.mu.Lock()
		ln.join(tu)
		before := ln.tok.lim.TokensAt(now)
		ln.mu.Unlock()
		if err := ln.takePaces(t.Context(), tu); err != nil {
			t.Fatal(err)
		}
		ln.mu.Lock()
		taken := before - ln.tok.lim.TokensAt(now)
		ln.mu.Unlock()
		if taken != 0 {
			t.Errorf("its turn took %v of the rate.Limiter before it was sent, want 0", taken)
		}
		p, _ := ln.send(tu)
		if p == nil {
			t.Fatal("not sent")
		}
		ln.mu.Lock()
		taken = before - ln.tok.lim.TokensAt(now)
		ln.mu.Unlock()
		if taken != 500 {
			t.Errorf("sent, it took %v of the rate.Limiter, want 500", taken)
		}
		p.Done(Outcome{Result: Admitted})
	})
}

// TestPaceRaisedKeepsSpacing: a pace raised between two turns gives the
// next no sooner than the new pace's spacing after the turn before, kept
// at the old pace. (The rate.Limiter counted the turn kept as paid at the
// new pace, and gave the next 94 ms after it at 451 a minute: nginx's
// limit_req with no burst refused it.) Raised at each point between two
// turns at 336 a minute, to 451.
func TestPaceRaisedKeepsSpacing(t *testing.T) {
	const from, to = 336.0 / 60, 451.0 / 60
	least := time.Second * 60 / 451
	for _, at := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 90 * time.Millisecond, 130 * time.Millisecond, 170 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			l := New(Config{RPM: 60_000})
			ln := l.lane("")
			set := func(r float64) {
				ln.mu.Lock()
				ln.req.est.rate, ln.req.est.ceil = r, r
				ln.logged("rpm", &ln.req, ln.l.now(), 1)
				ln.wake()
				ln.mu.Unlock()
			}
			set(from)
			var mu sync.Mutex
			var sends []time.Time
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 5 {
						if err := wait(l, t.Context(), 1); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						sends = append(sends, time.Now())
						mu.Unlock()
					}
				})
			}
			time.Sleep(2 * time.Second)
			mu.Lock()
			last := sends[len(sends)-1]
			mu.Unlock()
			time.Sleep(time.Until(last.Add(at)))
			set(to)
			wg.Wait()
			for i := 1; i < len(sends); i++ {
				if gap := sends[i].Sub(sends[i-1]); sends[i-1].After(last.Add(-time.Nanosecond)) && gap < least-time.Millisecond {
					t.Fatalf("raised %v after a turn: the next two went %v apart, want %v at least", at, gap, least)
				}
			}
		})
	}
}

// TestSpacingForgetsADroppedPace: a pace dropped (a cap found, say) and
// set again gives its first turn at once: the turns given at the old one,
// some ahead of now, space nothing at the new.
func TestSpacingForgetsADroppedPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Adapt: true}) // untold: no pace but the one set
		ln := l.lane("")
		ln.mu.Lock()
		defer ln.mu.Unlock()
		set := func(r float64) {
			ln.req.est.rate, ln.req.est.ceil = r, r
			ln.logged("rpm", &ln.req, ln.l.now(), 1)
		}
		set(2)
		now := ln.l.now()
		ln.req.spaced(now.Add(400 * time.Millisecond)) // a turn given ahead, at 2 a second
		set(math.Inf(1))
		set(2)
		if at := ln.req.spaced(now); !at.Equal(now) {
			t.Errorf("the first turn at the pace set again goes %v after now, want at once", at.Sub(now))
		}
	})
}
