package pace

import (
	"math"
	"testing"
	"time"
)

// bunch sends k requests a microsecond apart from d, the one at took (-1:
// none) admitted 200 ms later, the rest refused at once.
func bunch(f *flights, d time.Duration, k, took int) {
	for i := range k {
		sent := at(d + time.Duration(i)*time.Microsecond)
		s := f.send(sent)
		if i == took {
			f.answer(s, sent.Add(200*ms), tookIt)
		} else {
			f.answer(s, sent, refusedIt)
		}
	}
}

func TestSingles(t *testing.T) {
	tests := []struct {
		name    string
		bunches func(*flights)
		want    float64
	}{
		{"one of each of three bunches 250 ms apart", func(f *flights) {
			bunch(f, 0, 4, 0)
			bunch(f, 250*ms, 8, 3)
			bunch(f, 500*ms, 8, 7)
		}, 4},
		{"a bunch refused whole between: one in 500 ms", func(f *flights) {
			bunch(f, 0, 4, 0)
			bunch(f, 250*ms, 8, -1)
			bunch(f, 500*ms, 8, 2)
		}, 2},
		{"one bunch", func(f *flights) { bunch(f, 0, 4, 0) }, 0},
		{"a burst: two of a bunch taken", func(f *flights) {
			bunch(f, 0, 4, 0)
			s := f.send(at(250 * ms))
			f.answer(s, at(450*ms), tookIt)
			bunch(f, 250*ms+time.Microsecond, 4, 0)
			bunch(f, 500*ms, 4, 0)
		}, 0},
		{"the last bunch not all answered: the two before", func(f *flights) {
			bunch(f, 0, 4, 0)
			bunch(f, 250*ms, 4, 0)
			bunch(f, 500*ms, 4, 0)
			f.send(at(500*ms + 10*time.Microsecond))
		}, 4},
	}
	for _, tt := range tests {
		var f flights
		tt.bunches(&f)
		if got := f.singles(); math.Abs(got-tt.want) > 0.01 {
			t.Errorf("%s: %.3f a second, want %v", tt.name, got, tt.want)
		}
	}
}

// The first cut of all goes no lower than the rate the opening's bunches
// show (see singles), however little the server took in its first second.
func TestOpeningCutNoLowerThanSingles(t *testing.T) {
	e := newEstimator(math.Inf(1), true, t0)
	e.sent(12)
	e.admitted(at(200*ms), t0, 1)
	e.admitted(at(450*ms), at(250*ms), 1)
	e.full.nays = 10
	e.ep.refused, e.ep.nays, e.ep.answers = 10, 10, 12
	cut := pending{at: at(500 * ms), decideAt: at(750 * ms), sentRate: 12, rate: math.Inf(1), sent: 12, sends: 12, n: 1}
	if next, _ := e.bracket(cut); next >= 4 {
		t.Fatalf("without singles the cut is to %.2f; the test needs it under 4", next)
	}
	e.single = 4
	if next, _ := e.bracket(cut); next < 4 {
		t.Errorf("cut to %.2f a second, want 4 at least", next)
	}
}
