package pace

import (
	"testing"
	"time"
)

// TestBucketSizedByResets: a GCRA of 24 a minute with room for a burst of
// 7, told as GitHub does (X-RateLimit-Limit 24, the remaining and the time
// to full), is followed as a bucket of 7 refilling 0.4 a second, the size
// and rate its resets show: room comes back a unit each 2.5 s, not when
// the reset is reached, and after a long idle 7 are left, not 24. A bucket
// whose limit is its size (judge's case) and a sliding log whose resets
// stay at its length are not taken so.
func TestBucketSizedByResets(t *testing.T) {
	ms := time.Millisecond
	gcra := func() *window {
		var w window
		for i, r := range []Reading{{Left: 5, Reset: 5 * time.Second}, {Left: 1, Reset: 15 * time.Second}} {
			seq := float64(2 + 4*i)
			sent := time.Duration(i) * 50 * ms
			w.sent(at(sent), seq)
			r.Told, r.Limit = true, 24
			w.read(r, at(sent), at(sent+50*ms), seq)
		}
		return &w
	}
	w := gcra()
	if w.refill < 0.39 || w.refill > 0.41 || w.limit != 7 {
		t.Fatalf("followed with refill %.3f/s and limit %d, want 0.4/s and 7", w.refill, w.limit)
	}
	if ok, _ := w.room(at(2600*ms), 6, 2, 0); !ok {
		t.Errorf("2 units 2.55 s after a reading of 1 left: no room, want room (1 + 2.55 x 0.4)")
	}
	if ok, _ := w.room(at(2600*ms), 6, 3, 0); ok {
		t.Errorf("3 units 2.55 s after a reading of 1 left: room, want none")
	}
	if got := gcra().avail(at(time.Minute), 6); got != 7 {
		t.Errorf("after a minute idle %.1f left, want 7 (the bucket's size)", got)
	}
	var b window // a bucket of its limit: judge's, rate 1000/10 s
	b.read(Reading{Told: true, Limit: 1000, Left: 800, Reset: 2 * time.Second}, at(0), at(10*ms), 200)
	b.read(Reading{Told: true, Limit: 1000, Left: 0, Reset: 10 * time.Second}, at(time.Second), at(1010*ms), 1200)
	if b.sized || b.limit != 1000 || b.refill != 100 {
		t.Errorf("a bucket of its limit: sized %v, limit %d, refill %.1f; want judge's 1000 at 100/s", b.sized, b.limit, b.refill)
	}
	var l window // a sliding log of 15 s: each admitted request's reset is the length
	for i, left := range []int{20, 16, 12} {
		sent := time.Duration(i) * 3 * time.Second
		l.read(Reading{Told: true, Limit: 24, Left: left, Reset: 15 * time.Second}, at(sent), at(sent+50*ms), float64(4+4*i))
	}
	if l.sized || l.refill != 0 {
		t.Errorf("a sliding log: sized %v, refill %.3f; want neither", l.sized, l.refill)
	}
}
