package pace

import (
	"math"
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	var m meter
	if got := m.sum(t0, at(time.Minute)); got != 0 || !m.first.IsZero() {
		t.Errorf("empty meter: sum %v, first %v; want 0, zero", got, m.first)
	}
	// 20 a second for 10 s, from 2 s on.
	for i := range 200 {
		m.add(at(2*time.Second+time.Duration(i)*50*time.Millisecond), 1)
	}
	tests := []struct {
		name     string
		from, to time.Duration
		want     float64
	}{
		{"the last 4 s", 8 * time.Second, 11*time.Second + 950*time.Millisecond, 80},
		{"all of it", 0, time.Minute, 200},
		{"whole slots: the one to falls in counts whole", 2 * time.Second, 2*time.Second + 10*time.Millisecond, 4},
		{"nothing before the first", 0, time.Second, 0},
	}
	for _, tt := range tests {
		if got := m.sum(at(tt.from), at(tt.to)); got != tt.want {
			t.Errorf("%s: sum = %v, want %v", tt.name, got, tt.want)
		}
	}
	// A slot older than the memory is forgotten, not counted again.
	later := at(2*time.Second + time.Duration(len(m.slots))*meterSlot)
	m.add(later, 5)
	if got := m.sum(later.Add(-memory), later); got != 200-4+5 {
		t.Errorf("after a slot was reused: sum over the memory = %v, want %v", got, 200-4+5)
	}
}

// TestLongRunRate: what the server let through over a horizon refused all
// along is its rate, holds left out; a horizon refused in one half only,
// or longer than what was seen, says nothing.
func TestLongRunRate(t *testing.T) {
	span := time.Second
	// 20 s: 2 admitted a second; a refusal every 4 s, each holding 1 s.
	fill := func(refusals func(s int) bool) *longRun {
		l := &longRun{}
		for s := range 20 {
			l.got.add(at(time.Duration(s)*time.Second), 1)
			l.got.add(at(time.Duration(s)*time.Second+500*time.Millisecond), 1)
			if refusals(s) {
				l.nays.add(at(time.Duration(s)*time.Second+700*time.Millisecond), 1)
				l.held.add(at(time.Duration(s)*time.Second+700*time.Millisecond), 1)
			}
		}
		return l
	}
	now := at(20 * time.Second)
	all := fill(func(s int) bool { return s%4 == 3 })
	r, ok := all.rate(now, span, 0)
	// 16 s horizon: 32 admitted over 16 s less 4 s held.
	if !ok || r < 2.6 || r > 2.8 {
		t.Errorf("refused all along: rate %v ok %v, want about 32/12 and ok", r, ok)
	}
	if _, ok := fill(func(s int) bool { return s == 15 }).rate(now, span, 0); ok {
		t.Error("refused in the second half only: ok, want not")
	}
	if _, ok := all.rate(at(10*time.Second), span, 0); ok {
		t.Error("a horizon reaching before the first answer: ok, want not")
	}
	if _, ok := all.rate(now, 2*time.Second, 0); ok {
		t.Error("a horizon of 16 spans of 2 s, longer than what was seen: ok, want not")
	}
}

// TestCutBoundedSinceFirst: a sliding counter of 200 a 10 s took 200 at
// once, locked the lane out for 6 s and more, and took 59 in the 12 s
// after, refused all along. The epoch's measure, holds and all, goes no
// lower than a quarter of the 12,000/min sent; the whole run, 259 in
// 13.4 s, says 1,160/min, and the cut goes a little under it. Not before
// a run of refusals has lasted lockout (a second's window says nothing
// of a whole run's), nor when the epoch took a whole burst (a window that
// reopened whole counts it twice in the run), nor under a hedge (a ban's
// run says less than its window lets through).
func TestCutBoundedSinceFirst(t *testing.T) {
	ms := time.Millisecond
	setup := func(lockedOut bool, admitted float64) *estimator {
		e := newEstimator(math.Inf(1), true, t0)
		e.rate, e.rtt, e.span, e.full.burst, e.lockedOut = 200, 50*ms, 5940*ms, 200, lockedOut
		for i := range 200 {
			e.long.got.add(at(50*ms+time.Duration(i)*750*ms/200), 1)
		}
		for i := range 59 {
			e.long.got.add(at(7*time.Second+time.Duration(i)*6*time.Second/59), 1)
		}
		for _, d := range []time.Duration{800, 1050, 1300, 2000, 3000, 4000, 7000, 13200} {
			e.long.nays.add(at(d*ms), 1)
		}
		e.ep = epoch{start: at(1050 * ms), admitted: admitted, refused: 7, answers: 66, nays: 7, sends: 66, sent: 66, held: 11880 * ms}
		return &e
	}
	cut := pending{at: at(13225 * ms), sentRate: 200, rate: 200, n: 1}
	if next, _ := setup(true, 59).bounded(at(13475*ms), cut); next < 17 || next > 19.3 {
		t.Errorf("locked out, refused all along: next %.0f/min, want a little under 1,160/min", next*60)
	}
	if next, _ := setup(false, 59).bounded(at(13475*ms), cut); next < 49 {
		t.Errorf("never locked out: next %.0f/min, want a quarter of 12,000/min", next*60)
	}
	if next, _ := setup(true, 200).bounded(at(13475*ms), cut); next < 49 {
		t.Errorf("the epoch took a whole burst: next %.0f/min, want a quarter of 12,000/min", next*60)
	}
	hedged := setup(true, 59)
	hedged.hedge = hedge{rate: 5, window: 12 * time.Second, back: 150}
	if next, _ := hedged.bounded(at(13475*ms), cut); next < 49 {
		t.Errorf("hedged: next %.0f/min, want a quarter of 12,000/min", next*60)
	}
}

// TestLongRunRateNotOverAClimb: refusals at both ends of the horizon say
// the server was full all along only where the lane did not climb through
// it: the second half taking over a quarter more than the first, and the
// measure under the pace last held for a span (good), it is what was sent.
// (nginx's limit_req of 10 a second with no burst, two refusals 12 s apart
// and a climb between: cut from 535/min to 342/min.) At a steady pace, or
// with no pace held over the measure, it stands.
func TestLongRunRateNotOverAClimb(t *testing.T) {
	climb := &longRun{}
	for i := range 160 { // 16 s at 100 ms: 3 a second, then 6
		per := 0.3
		if i >= 80 {
			per = 0.6
		}
		climb.got.add(at(time.Duration(i)*100*time.Millisecond), per)
	}
	climb.nays.add(at(time.Second), 1)
	climb.nays.add(at(15*time.Second), 1)
	now := at(16 * time.Second)
	if r, ok := climb.rate(now, time.Second, 7.8); ok {
		t.Errorf("a climb under the 7.8 a second held: rate %.2f, ok; want no measure", r)
	}
	if r, ok := climb.rate(now, time.Second, 0); !ok || r < 4 || r > 5 {
		t.Errorf("no pace held: rate %.2f ok %v, want about 4.5 and ok", r, ok)
	}
}

// A long run refused at both ends is no measure where the lane got more
// than it in the seconds before the refusal, its burst aside (see
// keptUp): the server was not full between. 6 a second for 12 s, then 9
// for 4 s, refused at the start and at the end, with a burst of one (a
// leaky bucket with none): not a climb by the halves (48 then 60), and
// the 6.75 a second of the whole horizon would cut the pace held at 9 to
// 6.4; the last 4 s took 8.5 a second, more than it.
func TestLongRunRateNotOverWhatWasKept(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.full.burst = 1
	for i := range 160 {
		per := 0.6
		if i >= 120 {
			per = 0.9
		}
		e.long.got.add(at(time.Duration(i)*100*time.Millisecond), per)
	}
	e.long.nays.add(at(time.Second), 1)
	now := at(16 * time.Second)
	e.long.nays.add(now, 1)
	if r, ok := e.long.rate(now, time.Second, 0); !ok || r < 6.5 || r > 7 {
		t.Fatalf("the long run: %.2f ok %v, want about 6.75 and ok", r, ok)
	}
	cut := pending{at: now, decideAt: now, sentRate: 10, rate: 10, between: 15 * time.Second}
	if next, _ := e.bounded(now, cut); next < 8.5 {
		t.Errorf("cut to %.2f a second, want no lower than what the last 4 s took (8.5)", next)
	}
}
