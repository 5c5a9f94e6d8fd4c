package pace

import (
	"testing"
	"time"
)

// counterReading is what a sliding counter of 20 a second, its fixed
// windows ending on whole seconds, says to a request sent at sent (in the
// window of second k): used counted, and the reset at the end of the next
// window.
func counterReading(sent time.Duration, used int) Reading {
	end := sent.Truncate(time.Second) + 2*time.Second
	return Reading{Told: true, Limit: 20, Left: 20 - used, Reset: end - sent}
}

// counted is a window that has followed 20 sends spread over [0, 1) and
// 10 over [1, 1.5) s, each read as a sliding counter counts it (the lane's
// own only), so its resets have moved on twice.
func counted(t *testing.T) *window {
	t.Helper()
	ms := time.Millisecond
	var w window
	seq := 0.0
	send := func(at0 time.Duration, used func(time.Duration) int) {
		seq++
		w.sent(at(at0), seq)
		w.read(counterReading(at0, used(at0)), at(at0), at(at0+10*ms), seq)
	}
	for i := range 20 {
		send(time.Duration(i)*50*ms, func(time.Duration) int { return i + 1 })
	}
	for i := range 10 {
		// In the second window: the first's 20 weighed by what is left of
		// it, and its own.
		send(time.Second+time.Duration(i)*50*ms, func(s time.Duration) int {
			into := float64(s-time.Second) / float64(time.Second)
			return int(20*(1-into) + float64(i+1) + 0.999) // the server rounds up
		})
	}
	// A third window's first send moves the reset on again.
	send(2*time.Second, func(time.Duration) int { return int(10*1.0 + 1) })
	if w.ctr.length != time.Second {
		t.Fatalf("after two moves of the reset by 1 s before it was reached, the counter's length = %v, want 1s", w.ctr.length)
	}
	return &w
}

// TestCounterTold: a reset that stands still through a fixed window and
// moves on by a length before it is reached, twice alike, is a sliding
// counter's; a move once, or a wall's, is not.
func TestCounterTold(t *testing.T) {
	counted(t)
	ms := time.Millisecond
	var once window
	once.read(counterReading(0, 1), at(0), at(10*ms), 1)
	once.read(counterReading(500*ms, 10), at(500*ms), at(510*ms), 10)
	once.read(counterReading(1100*ms, 20), at(1100*ms), at(1110*ms), 21)
	if once.ctr.length != 0 {
		t.Errorf("one move: taken for a counter of %v", once.ctr.length)
	}
	var wall window
	r := func(left int, reset time.Duration) Reading {
		return Reading{Told: true, Limit: 20, Left: left, Reset: reset}
	}
	for k := range 3 {
		base := time.Duration(k) * time.Second
		wall.read(r(19, time.Second), at(base), at(base+10*ms), float64(20*k+1))
		wall.read(r(10, 600*ms), at(base+400*ms), at(base+410*ms), float64(20*k+10))
	}
	if wall.ctr.length != 0 || !wall.wall {
		t.Errorf("a wall: counter %v, wall %v; want no counter, a wall", wall.ctr.length, wall.wall)
	}
}

// TestCounterLength: a counter's length, once known, is kept: a later
// move, of resets in whole seconds (each up to a second late), told
// 59.4 s of a minute's windows and put their ends off the grid.
func TestCounterLength(t *testing.T) {
	c := counter{length: time.Minute} // as a told window makes it (see beyond)
	for k := range 2 {
		d := 59400 * time.Millisecond
		c.move(d, d, time.Second, at(time.Duration(k+1)*d))
	}
	if c.length != time.Minute {
		t.Errorf("a counter of a minute moved by 59.4 s twice: length %v, want 1m0s", c.length)
	}
}

// TestCounterRoom: once told a counter, the tracker counts the lane's
// units as the server does: the window before weighed by its share left.
func TestCounterRoom(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		now      time.Duration
		n        float64
		wantOK   bool
		wantWait time.Duration // within 10 ms
	}{
		// At 2.0 s: the second window's 10, its first send of the third (1).
		{"at the edge, the window before counts whole, till the guard after", 2000 * ms, 10, false, 140 * ms},
		{"what it holds less the lane's", 2000 * ms, 9, true, 0},
		// At 2.5 s: 10 x 0.5 + 1 = 6 counted; 6.4 as the window before
		// weighs off from the guard (40 ms) after its end.
		{"half through, half the window before is back", 2500 * ms, 13.5, true, 0},
		{"more than that waits as the window before weighs off", 2500 * ms, 16, false, 240 * ms},
		{"past what the window before gives back: its end", 2500 * ms, 19.5, false, 501 * ms},
	}
	for _, tt := range tests {
		w := counted(t)
		ok, wait := w.room(at(tt.now), 31, tt.n, 0)
		if ok != tt.wantOK || (!ok && (wait-tt.wantWait).Abs() > 10*ms) {
			t.Errorf("%s: room(%v, %v) = %v, %v; want %v, %v", tt.name, tt.now, tt.n, ok, wait, tt.wantOK, tt.wantWait)
		}
	}
}

// TestCounterBesides: what the server counted besides the lane's own (here
// 5 refusals it counts) weighs off with the window it was counted in.
func TestCounterBesides(t *testing.T) {
	ms := time.Millisecond
	w := counted(t)
	w.sent(at(2100*ms), 32)
	w.read(counterReading(2100*ms, 16) /* 10 x 0.9 + 2 + 5, rounded up */, at(2100*ms), at(2110*ms), 32)
	for _, tt := range []struct {
		now  time.Duration
		want float64
	}{{2500 * ms, 5}, {3500 * ms, 2.5}, {4200 * ms, 0}} {
		if got := w.ctr.besides(at(tt.now)); (got-tt.want) > 0.6 || (tt.want-got) > 0.6 {
			t.Errorf("besides at %v = %.2f, want %.1f", tt.now, got, tt.want)
		}
	}
	// At 2.5 s the server holds the lane's 2 + 10 x (1 - 0.46) = 7.4 and
	// 4.6 besides (16 counted at 2.1 s less the lane's 11.4): 8 left, of
	// which the lane takes its share by what each holds, (7.4 + 1) /
	// (7.4 + 1 + 4.6), about 5.2, so that clients sharing the window do
	// not all take what comes back.
	if got := w.avail(at(2500*ms), 32); got < 5 || got > 5.4 {
		t.Errorf("avail at 2.5 s = %.2f, want its share of 8, about 5.2", got)
	}
}

// TestCounterOfToldLength: a reset beyond the window's told length is a
// sliding counter's (no other kind keeps a unit longer); told in whole
// seconds, rounded up, its ends are taken a second early, the latest so
// taken kept, and the window before weighs off a second late.
func TestCounterOfToldLength(t *testing.T) {
	var w window
	for i := range 24 {
		sent := time.Duration(i) * 500 * time.Millisecond / 23 // 24 over the first half second
		reset := (2*time.Minute - sent + time.Second - 1).Truncate(time.Second)
		w.sent(at(sent), float64(i+1))
		w.read(Reading{Told: true, Limit: 24, Left: 23 - i, Reset: reset, Window: time.Minute}, at(sent), at(sent+50*time.Millisecond), float64(i+1))
	}
	if !w.counting() || w.ctr.length != time.Minute {
		t.Fatalf("counting %v, length %v; want a counter of a minute", w.counting(), w.ctr.length)
	}
	if want := at(119500 * time.Millisecond); !w.ctr.edge.Equal(want) {
		t.Errorf("edge %v, want %v (the latest of the ends told, a second early)", w.ctr.edge.Sub(at(0)), want.Sub(at(0)))
	}
	// At 65 s the window before (from 59.5 s) weighs 1 - 4.5/60 of its 24:
	// 22.2 counted, room for one.
	if ok, _ := w.room(at(65*time.Second), 24, 1, 0); !ok {
		t.Errorf("no room for one at 65 s")
	}
	if ok, _ := w.room(at(65*time.Second), 24, 2, 0); ok {
		t.Errorf("room for two at 65 s")
	}
	var log window
	log.read(Reading{Told: true, Limit: 24, Left: 23, Reset: time.Minute, Window: time.Minute}, at(0), at(time.Second), 1)
	if log.counting() {
		t.Errorf("a reset of the told length made a counter")
	}
	var ban window // a penalty box's refusal: nothing left until the ban's end, past two lengths
	ban.read(Reading{Told: true, Limit: 24, Left: 0, Reset: 3 * time.Minute, Window: time.Minute}, at(0), at(time.Second), 1)
	if ban.ctr.length != 0 {
		t.Errorf("a ban of three told lengths made a counter")
	}
}

// TestCounterRefined: a counter's length found by two moves of its reset
// (each within the resets' resolution) is made exact by the ends told far
// apart, and an end told in milliseconds, rounded up, is taken a tick
// early: the sends that gather at a fixed window's start are counted in it
// whole, as the server counts them, not weighed off with the window before
// (a length 0.67 ms short, or an end 0.3 ms late, had the lane's own count
// thousands of tokens under the server's from a few windows on, answers
// slower than the window not telling it).
func TestCounterRefined(t *testing.T) {
	const limit = 1000
	us := time.Microsecond
	w := window{ctr: counter{length: 999328 * us}} // as two moves found it
	// The server: a counter of 1 s windows on whole seconds; the lane sends
	// 10 at each window's start and 10 at 0.4573 s into it, each answered
	// 1.5 s later.
	server := func(t time.Duration) float64 {
		k, into := t/time.Second, float64(t%time.Second)/float64(time.Second)
		cur, prev := 10.0, 20.0
		if t%time.Second >= 457300*us {
			cur = 20
		}
		if k == 0 {
			prev = 0
		}
		return cur + prev*(1-into)
	}
	seq := 0.0
	for k := range 12 {
		for _, off := range []time.Duration{0, 457300 * us} {
			sent := time.Duration(k)*time.Second + off
			seq += 10
			w.sent(at(sent), seq)
			if k >= 10 {
				continue // answered after 11.95 s: slower than the window
			}
			reset := (time.Duration(k+2)*time.Second - sent + time.Millisecond - 1).Truncate(time.Millisecond)
			used := int(server(sent) + 0.999)
			w.read(Reading{Told: true, Limit: limit, Left: limit - used, Reset: reset}, at(sent), at(sent+10*time.Millisecond), seq)
		}
	}
	if d := w.ctr.length - time.Second; d.Abs() > 100*us {
		t.Errorf("length %v after 12 windows, want 1s within 0.1 ms", w.ctr.length)
	}
	for _, now := range []time.Duration{11600 * time.Millisecond, 11950 * time.Millisecond} {
		if got, want := limit-w.avail(at(now), seq), server(now); got < want-0.5 {
			t.Errorf("at %v the lane counts %.1f held, the server %.1f", now, got, want)
		}
	}
}

// TestCounterOfToldRate: told a rate, a reset past one and a half of the
// length it gives (the limit over it), at an end that stood still for
// requests sent apart, is a sliding counter's of that length, also when
// the later request's answer (a refusal, answered at once) came first; a
// sliding log's or a fixed window's resets, under a rate told too high,
// are not.
func TestCounterOfToldRate(t *testing.T) {
	ms := time.Millisecond
	type answer struct {
		sent, reset time.Duration
		left        int
	}
	follow := func(told float64, answers []answer) *window {
		w := window{told: told}
		for i, a := range answers {
			w.sent(at(a.sent), float64(i+1))
		}
		for i, a := range answers {
			w.read(Reading{Told: true, Limit: 20, Left: a.left, Reset: a.reset}, at(a.sent), at(a.sent+time.Millisecond), float64(i+1))
		}
		return &w
	}
	// The first reading sets the period, and with it the guard added to
	// the ends of the later ones.
	counter := []answer{{0, 2 * time.Second, 19}, {100 * ms, 1900 * ms, 18}, {300 * ms, 1700 * ms, 17}}
	if w := follow(20, counter); !w.counting() || w.ctr.length != time.Second {
		t.Errorf("a counter told 20 a second: counting %v, length %v; want a counter of 1s", w.counting(), w.ctr.length)
	}
	if w := follow(20, []answer{counter[0], counter[2], counter[1]}); !w.counting() || w.ctr.length != time.Second {
		t.Errorf("a counter told 20 a second, the later answer first: counting %v, length %v; want a counter of 1s", w.counting(), w.ctr.length)
	}
	// The first answer a refusal (no period seen, no guard added to its
	// end), the older admitted one after it.
	if w := follow(20, []answer{counter[2], counter[1]}); !w.counting() || w.ctr.length != time.Second {
		t.Errorf("a counter told 20 a second, a refusal answered first: counting %v, length %v; want a counter of 1s", w.counting(), w.ctr.length)
	}
	if w := follow(20, counter[:2]); w.counting() {
		t.Errorf("one reset past the length, not seen to stand: a counter of %v", w.ctr.length)
	}
	log := []answer{{100 * ms, time.Second, 19}, {300 * ms, time.Second, 18}, {500 * ms, time.Second, 17}}
	wall := []answer{{100 * ms, 900 * ms, 19}, {300 * ms, 700 * ms, 18}, {500 * ms, 500 * ms, 17}}
	for name, answers := range map[string][]answer{"a sliding log": log, "a fixed window": wall} {
		if w := follow(24, answers); w.counting() {
			t.Errorf("%s of 1 s told 24 a second: a counter of %v", name, w.ctr.length)
		}
	}
}
