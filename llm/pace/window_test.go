package pace

import (
	"testing"
	"time"
)

// ev is an event of a window's table: a send (the lane's count reached
// seq at sent) or, with a reading, its answer (to the request sent at sent
// when the count was seq, seen at seen).
type ev struct {
	r          *Reading
	sent, seen time.Duration
	seq        float64
}

// unitSends are n sends of one unit each, every gap from from, the count
// going on from count.
func unitSends(from, gap time.Duration, count float64, n int) []ev {
	var es []ev
	for i := range n {
		es = append(es, ev{sent: from + time.Duration(i)*gap, seq: count + float64(i+1)})
	}
	return es
}

func read(r Reading, sent, seen time.Duration, seq float64) ev { return ev{&r, sent, seen, seq} }

func join(parts ...[]ev) []ev {
	var es []ev
	for _, p := range parts {
		es = append(es, p...)
	}
	return es
}

func TestWindowRoom(t *testing.T) {
	ms := time.Millisecond
	full20 := unitSends(0, 50*ms, 0, 20) // 20 sent over 0.95 s
	tests := []struct {
		name     string
		evs      []ev
		now      time.Duration
		count    float64 // the lane's count now
		n, kept  float64
		wantOK   bool
		wantWait time.Duration // when not ok, within 30 ms
	}{
		{"nothing known: room", nil, 0, 0, 1000, 0, true, 0},
		{"what is left fits", []ev{read(Reading{Told: true, Left: 500, Reset: time.Second}, 0, 10*ms, 1)},
			20 * ms, 1, 400, 0, true, 0},
		{"less what was sent since the reading's request went",
			[]ev{read(Reading{Told: true, Left: 500, Reset: time.Second}, 0, 10*ms, 100)},
			20 * ms, 300, 400, 0, false, 1000 * ms},
		{"room kept for another is not room",
			[]ev{read(Reading{Told: true, Left: 500, Reset: time.Second}, 0, 10*ms, 1)},
			20 * ms, 1, 400, 200, false, 1000 * ms},
		{"an older reading says nothing new",
			[]ev{read(Reading{Told: true, Left: 100, Reset: time.Second}, 10*ms, 30*ms, 2),
				read(Reading{Told: true, Left: 900, Reset: time.Second}, 0, 40*ms, 1)},
			50 * ms, 2, 400, 0, false, 980 * ms},
		{"a reading whose reset has passed is old news",
			[]ev{read(Reading{Told: true, Left: 0, Reset: 100 * ms}, 0, 200*ms, 1)},
			200 * ms, 1, 400, 0, true, 0},
		{"an answer slower than the window still tells its size: what was sent since counts for the length",
			join(unitSends(0, 0, 0, 20), unitSends(time.Second, 0, 20, 20),
				[]ev{read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, 0, 1500*ms, 20)}),
			1500 * ms, 40, 1, 0, false, 520 * ms},
		{"a size not known: nothing is known after the reset",
			[]ev{read(Reading{Told: true, Left: 0, Reset: time.Second}, 0, 10*ms, 1)},
			1100 * ms, 1, 400, 0, true, 0},
		{"after the reset all the reading counted is back",
			[]ev{read(Reading{Told: true, Limit: 1000, Left: 0, Reset: time.Second}, 0, 10*ms, 1000)},
			1100 * ms, 1000, 900, 0, true, 0},
		{"bigger than a whole window, into an untouched one",
			[]ev{read(Reading{Told: true, Limit: 1000, Left: 0, Reset: time.Second}, 0, 10*ms, 1000)},
			1100 * ms, 1000, 1500, 0, true, 0},
		{"a wall: what it counted is back at its reset, not before",
			join(unitSends(0, 0, 0, 200), []ev{read(Reading{Told: true, Limit: 1000, Left: 800, Reset: 10 * time.Second}, 0, 10*ms, 200)},
				unitSends(time.Second, 0, 200, 800), []ev{read(Reading{Told: true, Limit: 1000, Left: 0, Reset: 9 * time.Second}, time.Second, 1010*ms, 1000)}),
			1100 * ms, 1000, 100, 0, false, 8950 * ms},
		{"a sliding window: a unit is back once it has been in the window for its length",
			join(full20, []ev{read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, 950*ms, 1000*ms, 20)}),
			1030 * ms, 20, 1, 0, true, 0},
		{"a sliding window: the next unit leaves a length after it went",
			join(full20, []ev{read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, 950*ms, 1000*ms, 20)}),
			1030 * ms, 20, 2, 0, false, 40 * ms},
		{"what the server counted besides the lane's own is back at the reset",
			join(unitSends(900*ms, 0, 0, 10), []ev{read(Reading{Told: true, Limit: 20, Left: 0, Reset: 2 * time.Second}, 900*ms, 950*ms, 10)}),
			1950 * ms, 10, 5, 0, false, 950 * ms},
		{"a sliding counter's reset, beyond its told length, is not waited for",
			join(full20, []ev{read(Reading{Told: true, Limit: 20, Left: 0, Reset: 2 * time.Second, Window: time.Second}, 950*ms, 1000*ms, 20)}),
			1100 * ms, 20, 2, 0, true, 0},
		{"after the reset, what was sent since still counts for the window's length",
			join(unitSends(0, 0, 0, 20), []ev{read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, 0, 10*ms, 20)},
				unitSends(500*ms, 0, 20, 15)),
			1100 * ms, 35, 10, 0, false, 420 * ms},
		{"a bucket: its reset is the time to full, and it refills as it goes",
			[]ev{read(Reading{Told: true, Limit: 1000, Left: 800, Reset: 2 * time.Second}, 0, 10*ms, 200),
				read(Reading{Told: true, Limit: 1000, Left: 0, Reset: 10 * time.Second}, time.Second, 1010*ms, 1200)},
			1100 * ms, 1200, 100, 0, false, 900 * ms},
		{"a bucket refills what was sent since the reading too, with no answer to tell it",
			join([]ev{read(Reading{Told: true, Limit: 1000, Left: 800, Reset: 2 * time.Second}, 0, 10*ms, 200),
				read(Reading{Told: true, Limit: 1000, Left: 0, Reset: 10 * time.Second}, time.Second, 1010*ms, 1200)},
				unitSends(1100*ms, 0, 1200, 1000)),
			1200 * ms, 2200, 100, 0, false, 10800 * ms},
		{"a bucket refills what was sent since the reading: room once it has",
			join([]ev{read(Reading{Told: true, Limit: 1000, Left: 800, Reset: 2 * time.Second}, 0, 10*ms, 200),
				read(Reading{Told: true, Limit: 1000, Left: 0, Reset: 10 * time.Second}, time.Second, 1010*ms, 1200)},
				unitSends(1100*ms, 0, 1200, 1000)),
			12 * time.Second, 2200, 50, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w window
			for _, e := range tt.evs {
				if e.r == nil {
					w.sent(at(e.sent), e.seq)
				} else {
					w.read(*e.r, at(e.sent), at(e.seen), e.seq)
				}
			}
			ok, wait := w.room(at(tt.now), tt.count, tt.n, tt.kept)
			if ok != tt.wantOK || (wait-tt.wantWait).Abs() > 30*time.Millisecond {
				t.Errorf("room(%v, count %v, n %v, kept %v) = %v, %v; want %v, %v",
					tt.now, tt.count, tt.n, tt.kept, ok, wait, tt.wantOK, tt.wantWait)
			}
		})
	}
}

// TestWindowJudge: a bucket is told by resets that keep in step with what
// is used; a wall's end and a sliding log's newest unit do not, and
// readings too near to tell leave the judgement as it was.
func TestWindowJudge(t *testing.T) {
	ms := time.Millisecond
	r := func(left int, reset time.Duration) Reading {
		return Reading{Told: true, Limit: 20, Left: left, Reset: reset}
	}
	tests := []struct {
		name   string
		reads  []Reading // sent 100 ms apart
		bucket bool
	}{
		{"resets in step with what is used: a bucket", []Reading{r(19, 50*ms), r(15, 250*ms)}, true},
		{"a sliding log's reset stays a length on", []Reading{r(19, time.Second), r(15, time.Second)}, false},
		{"a wall's reset comes nearer", []Reading{r(19, 950*ms), r(15, 850*ms)}, false},
		{"a bucket, then a reading that is not", []Reading{r(19, 50*ms), r(15, 250*ms), r(10, 250*ms)}, false},
		{"whole seconds too near to tell: a wall renewed is no bucket",
			[]Reading{r(0, time.Second), r(19, time.Second)}, false},
		{"whole seconds far enough apart: a bucket of a minute",
			[]Reading{{Told: true, Limit: 600, Left: 590, Reset: 10 * time.Second}, {Told: true, Limit: 600, Left: 560, Reset: 40 * time.Second}}, true},
		{"too little change of use to tell", []Reading{r(19, 50*ms), r(18, 900*ms)}, false},
	}
	for _, tt := range tests {
		var w window
		for i, rd := range tt.reads {
			sent := time.Duration(i) * 100 * ms
			w.read(rd, at(sent), at(sent+10*ms), float64(20-rd.Left))
		}
		if got := w.refill > 0; got != tt.bucket {
			t.Errorf("%s: a bucket = %v (refill %v), want %v", tt.name, got, w.refill, tt.bucket)
		}
	}
}

// TestWindowGivesBackAtItsPace: before its reset a window gives back no
// more than a window's worth over its length from the reading, whatever
// the lane's sends that have left: a sliding counter still weighs the
// window before.
func TestWindowGivesBackAtItsPace(t *testing.T) {
	ms := time.Millisecond
	var w window
	for _, e := range unitSends(0, 10*ms, 0, 20) { // 20 sent over the first 0.19 s
		w.sent(at(e.sent), e.seq)
	}
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: 2 * time.Second, Window: time.Second}, at(990*ms), at(time.Second), 20)
	// By 1.05 s the units sent by 10 ms have been in the window for its
	// length (and the guard), but 20 a second from 0.99 s gives back one.
	if ok, _ := w.room(at(1050*ms), 20, 1, 0); !ok {
		t.Errorf("no room for one at 1.05 s")
	}
	ok, wait := w.room(at(1050*ms), 20, 2, 0)
	if ok || (wait-45*ms).Abs() > 10*ms {
		t.Errorf("room(2) at 1.05 s = %v, %v; want a wait of ~45 ms", ok, wait)
	}
}

// TestWindowWall: a fixed window is told by a reset that stands still
// until it is reached and then moves on; what the lane sent in it has
// left at its end, not a length after each send.
func TestWindowWall(t *testing.T) {
	ms := time.Millisecond
	r := func(left int, reset time.Duration) Reading {
		return Reading{Told: true, Limit: 20, Left: left, Reset: reset}
	}
	tests := []struct {
		name  string
		reads []ev
		wall  bool
	}{
		{"a reset that stands still, reached, then a period on: a wall",
			[]ev{read(r(19, time.Second), 0, 10*ms, 1), read(r(10, 600*ms), 400*ms, 410*ms, 10), read(r(19, 950*ms), 1050*ms, 1060*ms, 21)}, true},
		{"a reset that stands still and moves on before it is reached: a sliding counter",
			[]ev{read(r(19, 2*time.Second), 0, 10*ms, 1), read(r(10, 1600*ms), 400*ms, 410*ms, 10), read(r(5, 1950*ms), 1050*ms, 1060*ms, 21)}, false},
		{"whole seconds of a 10 s window: its ends are not known well enough for a wall",
			[]ev{read(Reading{Told: true, Limit: 20, Left: 19, Reset: 10 * time.Second}, 0, 10*ms, 1),
				read(Reading{Told: true, Limit: 20, Left: 10, Reset: 8 * time.Second}, 2*time.Second, 2010*ms, 10),
				read(Reading{Told: true, Limit: 20, Left: 19, Reset: 10 * time.Second}, 10050*ms, 10060*ms, 21)}, false},
		{"whole seconds of a minute's window: a wall",
			[]ev{read(Reading{Told: true, Limit: 20, Left: 19, Reset: time.Minute}, 0, 10*ms, 1),
				read(Reading{Told: true, Limit: 20, Left: 10, Reset: 50 * time.Second}, 10*time.Second, 10010*ms, 10),
				read(Reading{Told: true, Limit: 20, Left: 19, Reset: time.Minute}, 60050*ms, 60060*ms, 21)}, true},
		{"a reset that moves with each request: a sliding log",
			[]ev{read(r(19, time.Second), 0, 10*ms, 1), read(r(10, time.Second), 400*ms, 410*ms, 10), read(r(5, time.Second), 1050*ms, 1060*ms, 21)}, false},
	}
	for _, tt := range tests {
		var w window
		for _, e := range tt.reads {
			w.read(*e.r, at(e.sent), at(e.seen), e.seq)
		}
		if w.wall != tt.wall {
			t.Errorf("%s: a wall = %v, want %v", tt.name, w.wall, tt.wall)
		}
	}
	// In the wall above, 20 sent by 0.9 s have left at its end (1 s), and
	// those sent at 1.05 and 1.1 s leave at the next end (2 s), not a
	// length after they went.
	var w window
	for _, e := range join(unitSends(0, 45*ms, 0, 20), unitSends(1050*ms, 0, 20, 1), unitSends(1100*ms, 0, 21, 4)) {
		w.sent(at(e.sent), e.seq)
	}
	for _, e := range tests[0].reads {
		w.read(*e.r, at(e.sent), at(e.seen), e.seq)
	}
	if ok, wait := w.room(at(1200*ms), 25, 19, 0); ok || (wait-820*ms).Abs() > 30*ms {
		t.Errorf("room for 19 at 1.2 s = %v, %v; want a wait for the window's end at ~2.02 s", ok, wait)
	}
}

// TestWindowSlidingGivesBackAsUnitsLeave: a window of known length whose
// resets never reached past it keeps no unit longer: room comes back as
// each leaves, not at a window's worth over its length (the pace that a
// sliding counter's units weigh off at).
func TestWindowSlidingGivesBackAsUnitsLeave(t *testing.T) {
	ms := time.Millisecond
	var w window
	for _, e := range join(unitSends(0, 0, 0, 19), unitSends(990*ms, 0, 19, 1)) {
		w.sent(at(e.sent), e.seq)
	}
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second, Window: time.Second}, at(990*ms), at(1000*ms), 20)
	// At 1.05 s the 19 sent at 0 have been in the window for its length
	// and the guard; a pace from the reading would give back one.
	if ok, wait := w.room(at(1050*ms), 20, 10, 0); !ok {
		t.Errorf("room for 10 at 1.05 s = false, %v; want true", wait)
	}
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: 1500 * ms, Window: time.Second}, at(995*ms), at(1010*ms), 20)
	if w.sliding() {
		t.Errorf("a reset past the told length, and still taken for a window that keeps no unit longer")
	}
}

// TestWindowSameInstant: of requests sent in the same instant, the reading
// that counted the most is kept, with the lane's count after the last of
// them: they reach the server in any order.
func TestWindowSameInstant(t *testing.T) {
	var w window
	for _, e := range unitSends(0, 0, 0, 10) {
		w.sent(at(e.sent), e.seq)
	}
	w.read(Reading{Told: true, Limit: 20, Left: 10, Reset: time.Second}, at(0), at(50*time.Millisecond), 10)
	w.read(Reading{Told: true, Limit: 20, Left: 17, Reset: time.Second}, at(0), at(60*time.Millisecond), 3)
	if w.left != 10 || w.seq != 10 {
		t.Errorf("left %v, seq %v; want the reading that counted the most (10 left) and the count after all (10)", w.left, w.seq)
	}
	if ok, _ := w.room(at(100*time.Millisecond), 10, 11, 0); ok {
		t.Errorf("room for 11 of the 10 left")
	}
}

// TestWindowSameInstantRolled: of two requests sent in the same instant,
// the one counted after the fixed window ended tells the new window; the
// old one's "none left" does not hold it for the new window's length.
func TestWindowSameInstantRolled(t *testing.T) {
	var w window
	for _, e := range unitSends(0, 0, 0, 10) {
		w.sent(at(e.sent), e.seq)
	}
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: 10 * time.Millisecond}, at(0), at(50*time.Millisecond), 10)
	w.read(Reading{Told: true, Limit: 20, Left: 15, Reset: 1010 * time.Millisecond}, at(0), at(60*time.Millisecond), 5)
	if w.left != 15 {
		t.Errorf("left %v; want the new window's 15", w.left)
	}
	if ok, _ := w.room(at(100*time.Millisecond), 10, 5, 0); !ok {
		t.Errorf("no room for 5 of the new window's 15 left")
	}
}
