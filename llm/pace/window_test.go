package pace

import (
	"testing"
	"time"
)

func TestWindowRoom(t *testing.T) {
	type read struct {
		r          Reading
		sent, seen time.Duration
		seq        float64 // the lane's count when it was sent, it included
	}
	tests := []struct {
		name     string
		reads    []read
		now      time.Duration
		count    float64 // the lane's count now
		n, kept  float64
		wantOK   bool
		wantWait time.Duration // when not ok, within a few ms
	}{
		{"nothing known: room", nil, 0, 0, 1000, 0, true, 0},
		{"what is left fits", []read{{Reading{Told: true, Left: 500, Reset: time.Second}, 0, 10 * time.Millisecond, 1}},
			20 * time.Millisecond, 1, 400, 0, true, 0},
		{"less what was sent since the reading's request went",
			[]read{{Reading{Told: true, Left: 500, Reset: time.Second}, 0, 10 * time.Millisecond, 100}},
			20 * time.Millisecond, 300, 400, 0, false, 980 * time.Millisecond},
		{"room kept for another is not room",
			[]read{{Reading{Told: true, Left: 500, Reset: time.Second}, 0, 10 * time.Millisecond, 1}},
			20 * time.Millisecond, 1, 400, 200, false, 980 * time.Millisecond},
		{"an older reading says nothing new",
			[]read{{Reading{Told: true, Left: 100, Reset: time.Second}, 10 * time.Millisecond, 30 * time.Millisecond, 2},
				{Reading{Told: true, Left: 900, Reset: time.Second}, 0, 40 * time.Millisecond, 1}},
			50 * time.Millisecond, 2, 400, 0, false, 960 * time.Millisecond},
		{"a reading whose reset has passed is old news",
			[]read{{Reading{Told: true, Left: 0, Reset: 100 * time.Millisecond}, 0, 200 * time.Millisecond, 1}},
			200 * time.Millisecond, 1, 400, 0, true, 0},
		{"after the reset a known limit starts the next window full",
			[]read{{Reading{Told: true, Limit: 1000, Left: 0, Reset: time.Second}, 0, 10 * time.Millisecond, 1000}},
			1100 * time.Millisecond, 1000, 900, 0, true, 0},
		{"bigger than a whole window, into an untouched one",
			[]read{{Reading{Told: true, Limit: 1000, Left: 0, Reset: time.Second}, 0, 10 * time.Millisecond, 1000}},
			1100 * time.Millisecond, 1000, 1500, 0, true, 0},
		{"a wall: nothing before its reset",
			[]read{{Reading{Told: true, Limit: 1000, Left: 800, Reset: 10 * time.Second}, 0, 10 * time.Millisecond, 200},
				{Reading{Told: true, Limit: 1000, Left: 0, Reset: 9 * time.Second}, time.Second, 1010 * time.Millisecond, 1000}},
			1100 * time.Millisecond, 1000, 100, 0, false, 8900 * time.Millisecond},
		{"a wall told in whole seconds: the earliest reset bounds it, a late reading does not push it on",
			[]read{{Reading{Told: true, Limit: 20, Left: 19, Reset: time.Second}, 0, 50 * time.Millisecond, 1},
				{Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, 978 * time.Millisecond, 1028 * time.Millisecond, 20}},
			1028 * time.Millisecond, 20, 1, 0, true, 0},
		{"a bucket: its reset is the time to full, and it refills as it goes",
			[]read{{Reading{Told: true, Limit: 1000, Left: 800, Reset: 2 * time.Second}, 0, 10 * time.Millisecond, 200},
				{Reading{Told: true, Limit: 1000, Left: 0, Reset: 10 * time.Second}, time.Second, 1010 * time.Millisecond, 1200}},
			1100 * time.Millisecond, 1200, 100, 0, false, 900 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w window
			for _, r := range tt.reads {
				w.read(r.r, at(r.sent), at(r.seen), r.seq)
			}
			ok, wait := w.room(at(tt.now), tt.count, tt.n, tt.kept)
			if ok != tt.wantOK || (wait-tt.wantWait).Abs() > 30*time.Millisecond {
				t.Errorf("room(%v, count %v, n %v, kept %v) = %v, %v; want %v, %v (window %+v)",
					tt.now, tt.count, tt.n, tt.kept, ok, wait, tt.wantOK, tt.wantWait, w)
			}
		})
	}
}

// TestWindowRenewHoldsTheLimit: the window after a reset holds its limit,
// less what is sent in it, until its own reset a period on.
func TestWindowRenewHoldsTheLimit(t *testing.T) {
	var w window
	w.read(Reading{Told: true, Limit: 1000, Left: 0, Reset: time.Second}, t0, at(10*time.Millisecond), 1000)
	if ok, _ := w.room(at(1100*time.Millisecond), 1000, 600, 0); !ok {
		t.Fatalf("600 do not fit a window of 1000 renewed")
	}
	if ok, wait := w.room(at(1200*time.Millisecond), 1600, 600, 0); ok || (wait-820*time.Millisecond).Abs() > 30*time.Millisecond {
		t.Errorf("600 more after 600 sent in the renewed window: %v, %v; want a wait for the reset a period on (~820ms)", ok, wait)
	}
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

// A sliding log's reset is when all its room is back: a reading sent just
// after what looked like a wall's reset, with nothing left, shows room
// comes back as it went, not at the next reset.
func TestWindowSlidingIsNoWall(t *testing.T) {
	var w window
	w.read(Reading{Told: true, Limit: 20, Left: 19, Reset: time.Second}, at(0), at(50*time.Millisecond), 1)
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, at(950*time.Millisecond), at(time.Second), 20)
	if ok, _ := w.room(at(1030*time.Millisecond), 20, 1, 0); !ok {
		t.Fatal("no room after the reset")
	}
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: time.Second}, at(1030*time.Millisecond), at(1080*time.Millisecond), 21)
	ok, wait := w.room(at(1060*time.Millisecond), 21, 1, 0)
	if ok || wait > 100*time.Millisecond {
		t.Errorf("room = %v, %v; want none, for a twentieth of a second or so (not until the reset a second on)", ok, wait)
	}
}
