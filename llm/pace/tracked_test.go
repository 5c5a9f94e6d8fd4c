package pace

import (
	"math"
	"testing"
	"time"
)

// fixedSecond is a server's fixed window of limit units a second, its walls
// at whole seconds from t0, as the tracker reads it.
type fixedSecond struct {
	limit, used int
	k           int64
}

// take counts n units arriving at arr and returns the reading their answer
// carries.
func (f *fixedSecond) take(arr time.Time, n int) Reading {
	k := int64(arr.Sub(t0) / time.Second)
	if k != f.k {
		f.k, f.used = k, 0
	}
	f.used += n
	end := t0.Add(time.Duration(k+1) * time.Second)
	return Reading{Told: true, Limit: f.limit, Left: f.limit - f.used, Reset: end.Sub(arr)}
}

// TestWallReadingsOutOfOrder: a burst sent at a fixed window's wall reaches
// the server in another order than it went; the first reading back, of the
// last sent, counts only itself. The tracker must not take the others for
// the window before: they went after its wall. (It did, and let 11,000
// tokens more go into a window of 20,000 the burst had filled:
// bench/tokens.sh refused 22-31 requests at one wall in two runs of three.)
func TestWallReadingsOutOfOrder(t *testing.T) {
	ms := time.Millisecond
	srv := fixedSecond{limit: 20_000, k: -1}
	var w window
	count := 0.0
	send := func(sent time.Duration, n int) float64 {
		count += float64(n)
		w.sent(at(sent), count)
		return count
	}
	for k := range 4 { // three sends a window, to learn its wall
		for _, off := range []time.Duration{100 * ms, 400 * ms, 700 * ms} {
			sent := time.Duration(k)*time.Second + off
			seq := send(sent, 1000)
			w.read(srv.take(at(sent), 1000), at(sent), at(sent+50*ms), seq)
		}
	}
	if !w.wall {
		t.Fatal("a fixed second not taken for a wall")
	}
	wall := w.reset.Sub(t0) // the tracker's, a guard after the server's
	seqs := make([]float64, 10)
	for i := range seqs {
		seqs[i] = send(wall, 1000) // ten at once at the wall
	}
	now := at(wall + 50*ms)
	for i, j := range []int{9, 8} { // the last sent reached the server first
		w.read(srv.take(at(wall), 1000), at(wall), now, seqs[j])
		if avail := w.avail(now, count); avail > 10_000 {
			t.Errorf("after reading %d of the burst of 10,000 (the server counted it first): %.0f left, want 10,000 at most", i+1, avail)
		}
	}
}

// TestCutOverTrackedWindow: refusals of requests the tracker let go into a
// fixed window its headers tell (its count off, not the pace) cut the pace
// no lower than a twentieth under the window's rate. (Cut after cut a
// tenth at a time, then deep, bench/tokens.sh took its pace to 0.73 of
// the rate and ran 1.15-1.43x in three runs of seven.)
func TestCutOverTrackedWindow(t *testing.T) {
	for _, tracked := range []float64{20, 0} {
		e := newEstimator(math.Inf(1), true, t0)
		e.rate = 40
		e.shift(t0, 40)
		start := time.Duration(0)
		for range 15 {
			var steps []step
			for i := range 40 {
				sent := start + time.Duration(i)*25*time.Millisecond
				steps = append(steps, step{what: "send", n: 1}, step{what: "ok", send: sent, seen: sent + 50*time.Millisecond, n: 1})
			}
			end := start + time.Second
			e.shown, e.tracked = tracked > 0, tracked
			steps = append(steps, step{what: "send", n: 5}, step{what: "refused", send: end, seen: end, n: 5, hint: 900 * time.Millisecond},
				step{what: "tick", seen: end + time.Second})
			play(&e, steps)
			start = end + time.Second
		}
		switch {
		case tracked > 0 && e.pace() < cutTo*tracked:
			t.Errorf("tracked window of %v a second: cut to %.2f, want %.2f at least", tracked, e.pace(), cutTo*tracked)
		case tracked == 0 && e.pace() >= cutTo*20:
			t.Errorf("no window tracked: the cuts stopped at %.2f (the test says nothing)", e.pace())
		}
	}
}

// TestAdmitsTold: the floor a tracked window sets a cut is for its own
// refusals, those whose reading shows less left than the request needed;
// one whose reading shows room is another limit's, and sets none. The
// floor never lifts a pace refused under it.
func TestAdmitsTold(t *testing.T) {
	w := window{limit: 10_000, fine: true, wall: true, period: time.Second}
	if got := w.admitsTold(Reading{Told: true, Limit: 10_000, Left: 30}, 80); got <= 0 {
		t.Errorf("refused 80 with 30 left: admits %v, want the window's rate", got)
	}
	if got := w.admitsTold(Reading{Told: true, Limit: 10_000, Left: 9_000}, 80); got != 0 {
		t.Errorf("refused 80 with 9,000 left: admits %v, want 0 (another limit's refusal)", got)
	}
	e := newEstimator(math.Inf(1), true, t0)
	if got := e.least(pending{rate: 5, tracked: 20}); got > 5 {
		t.Errorf("refused at 5 a second, the window admitting 20: least %v, want no lift over 5", got)
	}
}
