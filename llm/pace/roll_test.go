package pace

import (
	"testing"
	"time"
)

// TestRollOneFirst: a window of 20 whose resets are whole seconds, spent
// and its reset passed: one request goes first, the rest once it has gone
// unrefused for twice a refusal's round trip (where the reset named the
// second before a window that starts at the client's first request ends,
// the window's worth went at once and was refused). With no refusal seen
// yet, or resets finer than seconds, nothing is held.
func TestRollOneFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		trip time.Duration
		fine bool
		held bool
	}{
		{"whole seconds, a refusal seen", time.Millisecond, false, true},
		{"no refusal seen", 0, false, false},
		{"fine resets", time.Millisecond, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &window{limit: 20, base: 20, seq: 20, at: at(500 * time.Millisecond), reset: at(time.Second),
				period: time.Second, fine: tc.fine, trip: tc.trip}
			count := 0.0
			for i := range 20 {
				count++
				w.sent(at(time.Duration(i)*25*time.Millisecond), count)
			}
			now := at(time.Second + time.Millisecond)
			if ok, _ := w.room(now, count, 1, 0); !ok {
				t.Fatal("at the reset, the first request is held")
			}
			count++
			w.sent(now, count)
			ok, wait := w.room(now.Add(time.Millisecond), count, 1, 0)
			if ok == tc.held {
				t.Fatalf("1 ms after the first went: fits %v, want %v", ok, !tc.held)
			}
			if !tc.held {
				return
			}
			if want := w.rollWait() - time.Millisecond; wait != want {
				t.Errorf("held for %v, want %v", wait, want)
			}
			if ok, _ := w.room(now.Add(w.rollWait()), count, 1, 0); !ok {
				t.Error("not refused for twice a refusal's trip, the rest are still held")
			}
		})
	}
}

// TestRollAtTheResetItself: sends at the reset's very instant (a sleeper
// woken at it, on a fake clock) are the roll's: one goes, the rest wait;
// a refusal's slow round trip holds a roll a tenth of the period at most;
// and no probe goes beside the first.
func TestRollAtTheResetItself(t *testing.T) {
	w := &window{limit: 20, base: 20, seq: 20, at: at(500 * time.Millisecond), reset: at(time.Second),
		period: time.Second, trip: 3 * time.Second, lag: 3 * time.Second}
	count := 0.0
	for i := range 20 {
		count++
		w.sent(at(time.Duration(i)*25*time.Millisecond), count)
	}
	now := at(time.Second)
	if ok, _, _ := w.roomOrProbe(now, count, 1, 0); !ok {
		t.Fatal("at the reset, the first request is held")
	}
	count++
	w.sent(now, count)
	ok, wait, probe := w.roomOrProbe(now, count, 1, 0)
	if ok || probe {
		t.Fatalf("a second request at the reset's instant: fits %v, probe %v; want held", ok, probe)
	}
	if most := w.period/10 + bunchGap; wait > most {
		t.Errorf("held %v by a 3 s refusal trip, want a tenth of the period at most (%v)", wait, most)
	}
}
