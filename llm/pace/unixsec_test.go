package pace

import (
	"testing"
	"time"
)

// TestWidenedCoarseResets: a reset naming a whole second of the clock is
// read as the end of that second on windows of 10 s or more, its unit then
// a second whatever its fraction; others are read as told.
func TestWidenedCoarseResets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		period time.Duration // the longest reset seen before
		r      Reading
		want   time.Duration
		tick   time.Duration
	}{
		{"a minute's, coarse", 0, Reading{Told: true, Coarse: true, Reset: 59600 * time.Millisecond}, 60600 * time.Millisecond, time.Second},
		{"late in a minute's", time.Minute, Reading{Told: true, Coarse: true, Reset: 2 * time.Second}, 3 * time.Second, time.Second},
		{"a second's, coarse", time.Second, Reading{Told: true, Coarse: true, Reset: 600 * time.Millisecond}, 600 * time.Millisecond, 100 * time.Millisecond},
		{"a minute's, fine", 0, Reading{Told: true, Reset: 59600 * time.Millisecond}, 59600 * time.Millisecond, 100 * time.Millisecond},
	} {
		w := window{period: tc.period}
		got := w.widened(tc.r)
		if got.Reset != tc.want {
			t.Errorf("%s: reset read as %v, want %v", tc.name, got.Reset, tc.want)
		}
		if w.ctr.note(unit(got)); w.ctr.tick != tc.tick {
			t.Errorf("%s: resets' unit %v, want %v", tc.name, w.ctr.tick, tc.tick)
		}
	}
}
