package pace

import (
	"testing"
	"time"
)

// TestCounterOfBursts: a counter whose sends go in bursts at one instant
// (where a log of twice its length would give room back), so that its
// resets are never seen to stand, is told by its ends moving on by its
// length, twice alike, from readings of room left whose resets are short
// of the longest seen, by other than the time between the bursts; a
// sliding log and a fixed window of 2 s, sent the same bursts, are not.
func TestCounterOfBursts(t *testing.T) {
	ms := time.Millisecond
	bursts := []time.Duration{2025 * ms, 4039 * ms, 6040 * ms, 8039 * ms, 9539 * ms, 10040 * ms, 11540 * ms}
	follow := func(reset func(sent time.Duration) time.Duration, left func(i int) int) *window {
		var w window
		seq := 0.0
		for _, b := range bursts {
			for i := range 4 { // sent at one instant, answered in any order
				seq++
				w.sent(at(b), seq)
				w.read(Reading{Told: true, Limit: 20, Left: left(i), Reset: reset(b)}, at(b), at(b+1500*ms), seq)
			}
		}
		return &w
	}
	counter := func(sent time.Duration) time.Duration { return sent.Truncate(time.Second) + 2*time.Second - sent }
	if w := follow(counter, func(i int) int { return 12 - 3*i }); w.ctr.length != time.Second {
		t.Errorf("a counter of 1 s sent bursts: counter of %v, want 1s", w.ctr.length)
	}
	log := func(time.Duration) time.Duration { return 2 * time.Second }
	if w := follow(log, func(i int) int { return 12 - 3*i }); w.ctr.length != 0 {
		t.Errorf("a sliding log of 2 s sent bursts: a counter of %v", w.ctr.length)
	}
	// A refusal (too big, room left) half a second after each burst: a
	// log's reset is then when its newest unit leaves, sooner than the
	// length.
	var w window
	seq := 0.0
	for _, b := range bursts {
		seq++
		w.sent(at(b), seq)
		w.read(Reading{Told: true, Limit: 20, Left: 8, Reset: 2 * time.Second}, at(b), at(b+1500*ms), seq)
		w.sent(at(b+500*ms), seq+1)
		w.read(Reading{Told: true, Limit: 20, Left: 5, Reset: 1500 * ms}, at(b+500*ms), at(b+510*ms), seq+1)
	}
	if w.ctr.length != 0 {
		t.Errorf("a sliding log of 2 s refusing some: a counter of %v", w.ctr.length)
	}
	// A bucket of 20 filling faster than it is taken from, sent bursts a
	// quarter second apart: its time to full moves by 200 ms each, no log's
	// move, nor a counter's (half its longest reset, 1 s, at least).
	var bucket window
	bucket.read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, at(0), at(1500*ms), 20)
	for k := range 5 {
		sent := time.Duration(k+1) * 250 * ms
		bucket.sent(at(sent), float64(21+k))
		bucket.read(Reading{Told: true, Limit: 20, Left: 10 + k, Reset: time.Duration(451-50*k) * ms}, at(sent), at(sent+1500*ms), float64(21+k))
	}
	if bucket.ctr.length != 0 {
		t.Errorf("a bucket sent bursts: a counter of %v", bucket.ctr.length)
	}
	wall := func(sent time.Duration) time.Duration { return sent.Truncate(2*time.Second) + 2*time.Second - sent }
	if w := follow(wall, func(i int) int { return 12 - 3*i }); w.ctr.length != 0 {
		t.Errorf("a fixed window of 2 s sent bursts: a counter of %v", w.ctr.length)
	}
}

// TestReprobe: a window that has taken its probe lets another go once its
// longest reset has grown by a quarter past what it was then (a counter of
// half of it is another guess), not before.
func TestReprobe(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		reset time.Duration
		want  bool
	}{{1600 * ms, false}, {2 * time.Second, true}} {
		var w window
		w.sent(at(0), 20)
		w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: 1500 * ms}, at(0), at(10*ms), 20)
		w.probes++ // it went, and was admitted
		w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: tt.reset}, at(500*ms), at(510*ms), 20)
		if _, ok := w.probeAt(at(600*ms), 1); ok != tt.want {
			t.Errorf("after a probe at resets of 1.5 s, one of %v: another may go %v, want %v", tt.reset, ok, tt.want)
		}
	}
}

// TestCounterOfProbe: a counter of a minute, its first window filled in
// its first second (the last send refused, answered at once, the admitted
// ones 90 s later), is told by one admitted probe: the reset it tells is
// at the end of the window after its own, half the longest reset on from
// the end held, which the older readings show stood since the first send.
// A log of 2 minutes admitting the probe is not a counter.
func TestCounterOfProbe(t *testing.T) {
	ms, s := time.Millisecond, time.Second
	follow := func(probe Reading) *window {
		var w window
		for i := range 4 {
			w.sent(at(time.Duration(i)*250*ms), float64(3000*(i+1)))
		}
		w.read(Reading{Told: true, Limit: 12000, Left: 0, Reset: 119250 * ms}, at(750*ms), at(760*ms), 12000)
		for i := range 3 {
			sent := time.Duration(i) * 250 * ms
			w.read(Reading{Told: true, Limit: 12000, Left: 12000 - 3000*(i+1), Reset: 120*s - sent}, at(sent), at(sent+90*s), float64(3000*(i+1)))
		}
		w.probes++ // it went at 66.6 s
		w.sent(at(66600*ms), 12055)
		w.read(probe, at(66600*ms), at(156600*ms), 12055)
		return &w
	}
	if w := follow(Reading{Told: true, Limit: 12000, Left: 13, Reset: 180*s - 66600*ms}); w.ctr.length != time.Minute {
		t.Errorf("a counter of a minute admitting a probe: counter of %v, want 1m0s", w.ctr.length)
	}
	if w := follow(Reading{Told: true, Limit: 12000, Left: 13, Reset: 120 * s}); w.ctr.length != 0 {
		t.Errorf("a log of 2 minutes admitting a probe: counter of %v", w.ctr.length)
	}
}

// TestWallReachedOnTheWay: a request sent within a guard before a fixed
// window's end may reach the server after it, and be counted in the next
// window, its reset a whole window on: that is no move before the end,
// and a fixed second so read (1 ms before each end, as in the zoo) is a
// wall, not a counter of 999 ms.
func TestWallReachedOnTheWay(t *testing.T) {
	ms := time.Millisecond
	var w window
	seq := 0.0
	read := func(sent, reset time.Duration) {
		seq++
		w.sent(at(sent), seq)
		w.read(Reading{Told: true, Limit: 10_000, Left: 9_000, Reset: reset}, at(sent), at(sent+1500*ms), seq)
	}
	for k := range 6 {
		start := time.Duration(k) * time.Second
		read(start+100*ms, 900*ms)
		read(start+500*ms, 500*ms)
		read(start+999*ms, time.Second) // reached the server at the end: counted in the next
	}
	if w.ctr.length != 0 {
		t.Errorf("a fixed second, sends 1 ms before its ends counted after them: a counter of %v", w.ctr.length)
	}
	if !w.wall {
		t.Error("a fixed second, sends 1 ms before its ends counted after them: not a wall")
	}
}

// TestProbeBesidesKept: a window of no kind known held for a whole reset
// two minutes out lets a probe go into the second half of it even when
// room is kept for others, as far in as the probe and the kept room
// together would take to come back.
func TestProbeBesidesKept(t *testing.T) {
	ms := time.Millisecond
	var w window
	for i := range 4 {
		w.sent(at(time.Duration(i)*50*ms), float64(3000*(i+1)))
		w.read(Reading{Told: true, Limit: 12000, Left: 12000 - 3000*(i+1), Reset: 120*time.Second - time.Duration(i)*50*ms},
			at(time.Duration(i)*50*ms), at(time.Duration(i)*50*ms+50*ms), float64(3000*(i+1)))
	}
	now := at(time.Second)
	for _, kept := range []float64{0, 25} {
		ok, wait, _ := w.roomOrProbe(now, 12000, 25, kept)
		if ok || wait > 70*time.Second {
			t.Errorf("kept %v: room %v, wait %v; want none yet, a probe within 70 s", kept, ok, wait)
		}
	}
}

// TestNoCounterFromCoarseResets: throttled's GCRA of 20 a second with a
// burst of 5 tells X-RateLimit-Limit 6 and, as its reset, the time until
// it is full rounded up to whole seconds: 1 s while it holds anything.
// Told 20 a second, that limit gives a window of 0.3 s, and a reset of
// 1 s is more than one and a half of it; but a reset told in whole
// seconds cannot place a window shorter than a second, and the lane, taking
// a counter of 6 per 0.3 s, held itself to 5 of them, 0.83 of the told
// rate (throttled told, 1.19x the ideal).
func TestNoCounterFromCoarseResets(t *testing.T) {
	w := window{told: 20}
	tat := time.Duration(0) // the server's theoretical arrival time
	const T, tau = 50 * time.Millisecond, 250 * time.Millisecond
	for i := range 100 {
		sent := time.Duration(i) * 48 * time.Millisecond // a little over its rate
		next := max(tat, sent) + T
		left := 0
		if next-sent <= tau+T {
			tat = next
			left = int((tau + T - (tat - sent)) / T)
		}
		reset := (tat - sent + time.Second - 1).Truncate(time.Second)
		w.sent(at(sent), float64(i+1))
		w.read(Reading{Told: true, Limit: 6, Left: left, Reset: reset}, at(sent), at(sent+50*time.Millisecond), float64(i+1))
	}
	if w.ctr.length != 0 {
		t.Errorf("taken for a counter of %v", w.ctr.length)
	}
}
