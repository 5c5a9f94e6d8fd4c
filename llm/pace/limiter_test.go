package pace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// near reports whether got is within a millisecond of want: x/time/rate
// works in float64 seconds, so fake-clock times may be off by a few ns.
func near(got, want time.Duration) bool {
	return got > want-time.Millisecond && got < want+time.Millisecond
}

func TestLimiterRPM(t *testing.T) {
	tests := []struct {
		name     string
		rpm, n   int
		wantLast time.Duration // when the nth Wait returns
		wantGap  time.Duration // between Waits once the burst is spent
	}{
		{"600 rpm: evenly, 10 a second", 600, 100, 9900 * time.Millisecond, 100 * time.Millisecond},
		{"60 rpm: one a second", 60, 5, 4 * time.Second, time.Second},
		{"30 rpm: one every 2s", 30, 4, 6 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(tt.rpm, 0)
				start := time.Now()
				var prev time.Duration
				for i := range tt.n {
					if err := wait(l, t.Context(), 1); err != nil {
						t.Fatalf("Wait #%d = %v, want nil", i+1, err)
					}
					at := time.Since(start)
					if i >= 1 && !near(at-prev, tt.wantGap) {
						t.Errorf("Wait #%d returned %v after #%d, want %v", i+1, at-prev, i, tt.wantGap)
					}
					prev = at
				}
				if !near(prev, tt.wantLast) {
					t.Errorf("%d Waits at %d rpm took %v, want %v", tt.n, tt.rpm, prev, tt.wantLast)
				}
			})
		})
	}
}

func TestLimiterTPM(t *testing.T) {
	tests := []struct {
		name   string
		tpm    int
		tokens []int
		want   []time.Duration // when each Wait returns
	}{
		// The bucket holds a second's worth and starts empty, so a request
		// longer than a second's worth waits a second: a full bucket would
		// crowd the first window. One no longer goes as the pace's own
		// second has room (see inSecond), its turn a debt, unless a longer
		// one's debt is still being paid.
		{"a big request goes once a second's worth is in, the next when its debt is paid", 6000, []int{3000, 3000, 3000, 3000},
			[]time.Duration{time.Second, 31 * time.Second, 61 * time.Second, 91 * time.Second}},
		{"a request over a minute's budget too, and a small one after waits its debt", 6000, []int{10000, 10000, 100},
			[]time.Duration{time.Second, 101 * time.Second, 201 * time.Second}},
		{"small requests at the rate, a second apart", 6000, []int{100, 100, 100},
			[]time.Duration{0, time.Second, 2 * time.Second}},
		{"zero tokens take none", 60, []int{1, 0, 1},
			[]time.Duration{0, 0, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(0, tt.tpm)
				start := time.Now()
				for i, n := range tt.tokens {
					if err := wait(l, t.Context(), n); err != nil {
						t.Fatalf("Wait(ctx, %d) #%d = %v, want nil", n, i+1, err)
					}
					if at := time.Since(start); !near(at, tt.want[i]) {
						t.Errorf("Wait(ctx, %d) #%d returned at %v, want %v", n, i+1, at, tt.want[i])
					}
				}
			})
		})
	}
}

// waiters starts n goroutines that Wait on l and returns a function that
// collects, once they are all done, how long each took and what it returned.
func waiters(ctx context.Context, l *Limiter, n int) func() ([]time.Duration, []error) {
	var wg sync.WaitGroup
	took, errs := make([]time.Duration, n), make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			errs[i] = wait(l, ctx, 1)
			took[i] = time.Since(start)
		})
	}
	return func() ([]time.Duration, []error) { wg.Wait(); return took, errs }
}

func TestLimiterPause(t *testing.T) {
	tests := []struct {
		name   string
		pauses []time.Duration // each set 1s after the last, the first at once
		want   time.Duration   // when every waiter returns
	}{
		{"one pause", []time.Duration{10 * time.Second}, 10 * time.Second},
		{"a shorter pause does not shorten it", []time.Duration{10 * time.Second, 2 * time.Second}, 10 * time.Second},
		{"a longer pause extends it", []time.Duration{10 * time.Second, 20 * time.Second}, 21 * time.Second},
		{"zero and negative pauses do nothing", []time.Duration{0, -time.Second}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(0, 0)
				l.Pause("", tt.pauses[0])
				collect := waiters(t.Context(), l, 5)
				for _, d := range tt.pauses[1:] {
					time.Sleep(time.Second)
					l.Pause("", d)
				}
				took, errs := collect()
				for i := range took {
					if errs[i] != nil || !near(took[i], tt.want) {
						t.Errorf("Wait #%d = %v after %v, want nil after %v", i+1, errs[i], took[i], tt.want)
					}
				}
			})
		})
	}
}

// TestLimiterPauseWhileTaking checks that a pause that begins while a Wait
// sleeps for its turn at the rate holds that Wait too.
func TestLimiterPauseWhileTaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(60, 0) // one a second, burst 1
		if err := wait(l, t.Context(), 1); err != nil {
			t.Fatalf("first Wait = %v, want nil", err)
		}
		collect := waiters(t.Context(), l, 1) // its turn would come at 1s
		time.Sleep(500 * time.Millisecond)
		l.Pause("", 10*time.Second)
		took, errs := collect()
		if errs[0] != nil || took[0] < 10500*time.Millisecond {
			t.Errorf("Wait during Pause(10s) at 0.5s = %v after %v, want nil after at least 10.5s", errs[0], took[0])
		}
	})
}

// TestLimiterPauseSpreads checks that waiters held by a pause leave it at
// the request rate, not all at once.
func TestLimiterPauseSpreads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(60, 0)
		l.Pause("", 10*time.Second)
		took, errs := waiters(t.Context(), l, 3)()
		seen := map[time.Duration]bool{}
		for i := range took {
			if errs[i] != nil {
				t.Fatalf("Wait #%d = %v, want nil", i+1, errs[i])
			}
			seen[took[i].Round(time.Millisecond)] = true
		}
		for _, want := range []time.Duration{10 * time.Second, 11 * time.Second, 12 * time.Second} {
			if !seen[want] {
				t.Errorf("3 Waits at 60 rpm after Pause(10s) returned at %v, want at 10s, 11s and 12s", took)
				break
			}
		}
	})
}

func TestLimiterContext(t *testing.T) {
	tests := []struct {
		name  string
		rpm   int
		pause time.Duration
	}{
		{"waiting at the gate", 0, time.Hour},
		{"waiting for a request", 1, 0},
		{"no limit", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(tt.rpm, 0)
				_ = wait(l, t.Context(), 1) // spends the burst
				l.Pause("", tt.pause)
				ctx, cancel := context.WithCancel(t.Context())
				if tt.pause == 0 && tt.rpm == 0 {
					cancel() // nothing would block: cancel up front
				}
				collect := waiters(ctx, l, 2)
				time.Sleep(time.Second)
				cancel()
				_, errs := collect()
				for i, err := range errs {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Wait #%d with ctx cancelled = %v, want context.Canceled", i+1, err)
					}
				}
			})
		})
	}
}

// TestLimiterCancelReturnsTurn checks that a Wait given up leaves its turn
// at the rate to the next one.
func TestLimiterCancelReturnsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(60, 0)
		_ = wait(l, t.Context(), 1)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		if err := wait(l, ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait with a 0.5s deadline at 60 rpm = %v, want context.DeadlineExceeded", err)
		}
		start := time.Now()
		if err := wait(l, t.Context(), 1); err != nil || !near(time.Since(start), 500*time.Millisecond) {
			t.Errorf("next Wait = %v after %v, want nil after 0.5s (at 1s, the turn given up)", err, time.Since(start))
		}
	})
}

func TestNilLimiter(t *testing.T) {
	var l *Limiter
	l.Pause("", time.Hour)
	if err := wait(l, t.Context(), 1e9); err != nil {
		t.Errorf("(*Limiter)(nil).Acquire(ctx, 1e9) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := wait(l, ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("(*Limiter)(nil).Acquire(cancelled, 1) = %v, want context.Canceled", err)
	}
	if rpm, tpm := l.Effective("m"); rpm != 0 || tpm != 0 || l.Models() != nil {
		t.Errorf("(*Limiter)(nil) has limits %v, %v and models %v, want none", rpm, tpm, l.Models())
	}
}

// newLimiter returns a limiter of rpm and tpm that learns nothing.
func newLimiter(rpm, tpm int) *Limiter { return New(Config{RPM: rpm, TPM: tpm}) }

// wait acquires a permit of tokens for the default model and tells it
// admitted, as a caller does once answered (an answer ends the opening's
// cap: see Limiter.opening).
func wait(l *Limiter, ctx context.Context, tokens int) error {
	p, err := l.Acquire(ctx, "", tokens)
	p.Done(Outcome{Result: Admitted})
	return err
}
