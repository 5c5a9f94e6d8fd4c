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
// refused it is taken for tokens when the requests so refused have been
// much bigger than the lane's others (a token limit refuses the big ones
// first, then small ones too), holding only that request; for requests
// otherwise, pausing the lane.
func TestRefusalThatDoesNotSayWhich(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refused    []int // the sizes refused, in turn; the last is judged
		wantTokens bool
	}{
		{"a big one: tokens", []int{4000}, true},
		{"one of the usual size: requests", []int{120}, false},
		{"a small one after big ones: tokens", []int{4000, 4000, 100}, true},
		{"of all sizes alike: requests", []int{60, 150, 90, 100}, false},
		{"no token estimates at all: requests", []int{0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				usual := 100 // the lane's usual size
				if tc.refused[0] == 0 {
					usual = 0 // a caller that estimates no tokens
				}
				if paused := lastUnsurePauses(t, usual, tc.refused); paused == tc.wantTokens {
					t.Errorf("the last refusal paused the lane: %v; want it taken for tokens: %v", paused, tc.wantTokens)
				}
			})
		})
	}
}

// lastUnsurePauses sends 20 requests of usual tokens, admitted, then one of
// each size refused without a word of which limit, and reports whether the
// last refusal paused the lane (what the others did aside).
func lastUnsurePauses(t *testing.T, usual int, refused []int) bool {
	l := New(Config{Adapt: true, Concurrency: 8})
	acquire := func(n int) *Permit {
		p, err := l.Acquire(t.Context(), "m", n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for range 20 {
		acquire(usual).Done(Outcome{Result: Admitted})
	}
	var ps []*Permit
	for _, n := range refused {
		ps = append(ps, acquire(n))
	}
	time.Sleep(100 * time.Millisecond)
	for _, p := range ps[:len(ps)-1] {
		p.Done(Outcome{Result: Refused, Unsure: true})
	}
	ln := l.lane("m")
	ln.mu.Lock()
	ln.until = time.Time{}
	ln.mu.Unlock()
	ps[len(ps)-1].Done(Outcome{Result: Refused, Unsure: true})
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.until.After(ln.l.now())
}

// TestWholeSecondHint: a request-429 saying Retry-After: 1 makes its own
// request wait the whole second, never less; once a pace has held, the
// others wait only the estimator's hold (a second's pause of the whole
// lane per refusal costs a second of sending where a bucket or a sliding
// window has room again much sooner); so too when told the limit, the
// pace known from the start; before, the whole second. Told the limit
// with no search (--adapt=false), there is no estimator's hold: the whole
// second, as before.
func TestWholeSecondHint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		held      bool // a pace has held
		rpm       int  // told
		hint      time.Duration
		fine      bool // told finer than whole seconds
		wantPause time.Duration
		fixed     bool // Adapt off
	}{
		{"a pace held, a whole second", true, 0, time.Second, false, 250 * time.Millisecond, false},
		{"no pace held yet", false, 0, time.Second, false, time.Second, false},
		{"told the limit, no pace held yet", false, 1200, time.Second, false, 250 * time.Millisecond, false},
		{"told the limit, several seconds", false, 1200, 3 * time.Second, false, 3 * time.Second, false},
		{"a pace held, a finer hint", true, 0, 700 * time.Millisecond, false, 700 * time.Millisecond, false},
		{"a pace held, several seconds", true, 0, 3 * time.Second, false, 3 * time.Second, false},
		{"a pace held, a second told finely (X-Retry-In: 1s): a second", true, 0, time.Second, true, time.Second, false},
		{"told the limit, no search: a second", false, 1200, time.Second, false, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Config{Adapt: !tc.fixed, Concurrency: 8, RPM: tc.rpm})
				ln := l.lane("m")
				if tc.held {
					ln.mu.Lock()
					ln.req.est.rate, ln.req.est.good = 20, 20
					ln.logged("rpm", &ln.req, ln.l.now(), 1)
					ln.mu.Unlock()
				}
				p, err := l.Acquire(t.Context(), "m", 1)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
				wait := p.Done(Outcome{Result: Refused, Hint: tc.hint, FineHint: tc.fine})
				if wait < tc.hint {
					t.Errorf("the refused request waits %v, want its hint %v at least", wait, tc.hint)
				}
				ln.mu.Lock()
				pause := ln.until.Sub(ln.l.now())
				ln.mu.Unlock()
				if pause != tc.wantPause {
					t.Errorf("the lane is paused %v, want %v", pause, tc.wantPause)
				}
			})
		})
	}
}

// TestNoiseRefusalPausesNoOne: a refusal that the known noise level
// accounts for costs its own request its hint, and the others nothing: the
// lane is not paused, whatever the hint.
func TestNoiseRefusalPausesNoOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Adapt: true, Concurrency: 8})
		ln := l.lane("m")
		ln.mu.Lock()
		ln.req.est.noise.level = 0.1
		ln.mu.Unlock()
		for range 20 {
			p, err := l.Acquire(t.Context(), "m", 1)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			p.Done(Outcome{Result: Admitted})
		}
		p, err := l.Acquire(t.Context(), "m", 1)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if wait := p.Done(Outcome{Result: Refused, Hint: time.Second}); wait < time.Second {
			t.Errorf("the refused request waits %v, want its hint, 1s", wait)
		}
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if ln.until.After(ln.l.now()) {
			t.Errorf("the lane is paused %v for a refusal the noise level explains, want not at all", ln.until.Sub(ln.l.now()))
		}
	})
}

func TestSpentClaim(t *testing.T) {
	tests := []struct {
		name string
		r    Reading
		most int
		own  float64
		want bool // contradicted
	}{
		{"spent, and the client sent most of it", Reading{Told: true, Limit: 10000, Left: 0, Reset: time.Minute}, 0, 9000, false},
		{"spent for 6 minutes, the client sent a fraction of it", Reading{Told: true, Limit: 10000, Left: 0, Reset: 6 * time.Minute}, 0, 300, true},
		{"no limit given, but more was said to be left before", Reading{Told: true, Left: 0, Reset: 6 * time.Minute}, 10000, 300, true},
		{"no size known: believed", Reading{Told: true, Left: 0, Reset: 6 * time.Minute}, 0, 0, false},
		{"not spent: no claim", Reading{Told: true, Limit: 10000, Left: 5000, Reset: time.Minute}, 0, 0, false},
		{"nothing told", Reading{}, 0, 0, false},
	}
	for _, tt := range tests {
		if got := spentClaim(tt.r, tt.most, tt.own); got != tt.want {
			t.Errorf("%s: spentClaim(%+v, %d, %v) = %v, want %v", tt.name, tt.r, tt.most, tt.own, got, tt.want)
		}
	}
}

// TestClaimOverLongerThanCounted: a claim that a window is spent, over a
// period the lane's own count covers, is weighed by it: sent nothing in
// the last minute, a minute's window said spent is not believed. Over a
// period longer than the count holds (a sliding counter of a minute, its
// resets two minutes out, filled at the opening 66 s before), it is, where
// the window's newest reading was spent too; not where that had room.
func TestClaimOverLongerThanCounted(t *testing.T) {
	refused := Outcome{Result: Refused, Tokens: true,
		TokenWindow: Reading{Told: true, Limit: 12_000, Left: 0, Reset: 114 * time.Second}}
	for _, tc := range []struct {
		period     time.Duration
		sent, left float64 // sent at 0; left by the newest reading
		want       bool
	}{
		{time.Minute, 12_000, 0, true},
		{2 * time.Minute, 12_000, 0, false},
		{10 * time.Minute, 24, 0, false},
		{10 * time.Minute, 24, 12_000, true},
	} {
		ln := New(Config{Adapt: true}).lane("m")
		ln.mu.Lock()
		ln.tok.own.add(at(0), tc.sent)
		ln.tok.win.period, ln.tok.win.left = tc.period, tc.left
		if got := ln.contradicted(refused, at(66*time.Second)); got != tc.want {
			t.Errorf("window of %v, %v sent 66 s before, %v left since: contradicted %v, want %v", tc.period, tc.sent, tc.left, got, tc.want)
		}
		ln.mu.Unlock()
	}
}

// TestShortClaimRefusalBelieved: a refusal whose claim of a spent window
// the lane's count over the window's period contradicts teaches the pace
// when the claim resets no later than its hint (a GCRA's whole-second
// reset, told GitHub's way) and the lane's count over all it remembers
// bears the claim out: 40 sent in 4 s against a limit of 100 said spent
// over a second. Not where the claim is of a window spent for 6 minutes,
// nor where the lane sent 10 in all: both cost only their own
// Retry-After, the lane not paused.
func TestShortClaimRefusalBelieved(t *testing.T) {
	for _, tc := range []struct {
		reset    time.Duration
		sent     int
		believed bool
	}{{time.Second, 40, true}, {6 * time.Minute, 40, false}, {time.Second, 10, false}} {
		synctest.Test(t, func(t *testing.T) {
			l := New(Config{Adapt: true, Concurrency: 8})
			for range tc.sent {
				p, err := l.Acquire(t.Context(), "m", 1)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(4 * time.Second / time.Duration(tc.sent))
				p.Done(Outcome{Result: Admitted, Requests: Reading{Told: true, Limit: 100, Left: 60, Reset: time.Second}})
			}
			p, err := l.Acquire(t.Context(), "m", 1)
			if err != nil {
				t.Fatal(err)
			}
			claim := Reading{Told: true, Limit: 100, Left: 0, Reset: tc.reset}
			if wait := p.Done(Outcome{Result: Refused, Hint: time.Second, Requests: claim}); wait < time.Second {
				t.Errorf("reset %v: the refused request waits %v, want its hint, 1s", tc.reset, wait)
			}
			ln := l.lane("m")
			ln.mu.Lock()
			defer ln.mu.Unlock()
			if got := ln.until.After(ln.l.now()); got != tc.believed || ln.req.est.cut.decideAt.IsZero() == tc.believed {
				t.Errorf("claim of 100 spent, reset %v, %d sent in 4 s: lane paused %v, a cut pending %v; want both %v",
					tc.reset, tc.sent, got, !ln.req.est.cut.decideAt.IsZero(), tc.believed)
			}
		})
	}
}

// TestDenseClaimRefusalsBelieved: refusals whose claim of a spent window
// the lane's count contradicts (8 sent in all, a limit of 100 said spent
// for a second, GitHub's way) are believed once most answers of about the
// last second are refusals, three at least: a server refusing so much is
// limiting the lane, whatever its claims say of its windows. (A GCRA of
// 100 per 10 s with no burst refused 7 of the opening's 8 sent at once,
// and again a second later: 4.1% of the run refused, now 2.2%.) Refusals
// among many admitted answers are not, and cost only their own hint.
func TestDenseClaimRefusalsBelieved(t *testing.T) {
	claim := Reading{Told: true, Limit: 100, Left: 0, Reset: time.Second}
	for _, tc := range []struct {
		name     string
		admitted int // answers admitted before each refusal
	}{{"refusals in a row", 0}, {"one refusal in five", 4}} {
		synctest.Test(t, func(t *testing.T) {
			l := New(Config{Adapt: true, Concurrency: 8})
			ln := l.lane("m")
			for i := range denseNays {
				for range tc.admitted {
					p, err := l.Acquire(t.Context(), "m", 1)
					if err != nil {
						t.Fatal(err)
					}
					p.Done(Outcome{Result: Admitted, Requests: Reading{Told: true, Limit: 100, Left: 99, Reset: time.Second}})
				}
				p, err := l.Acquire(t.Context(), "m", 1)
				if err != nil {
					t.Fatal(err)
				}
				if wait := p.Done(Outcome{Result: Refused, Hint: time.Second, Requests: claim}); wait < time.Second {
					t.Errorf("%s: refusal %d waits %v, want its hint, 1s", tc.name, i+1, wait)
				}
				ln.mu.Lock()
				paused := ln.until.After(ln.l.now())
				ln.mu.Unlock()
				want := tc.admitted == 0 && i == denseNays-1
				if paused != want {
					t.Errorf("%s: after refusal %d the lane paused %v, want %v", tc.name, i+1, paused, want)
				}
			}
		})
	}
}
