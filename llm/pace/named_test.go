package pace

import (
	"testing"
	"time"
)

// TestNamedSecond: a whole-second reset is counted from the arrival only
// once a refusal at the end counted from the send and an admission at
// the second named show the window ends at that second; a server whose
// ends lie past the second it names (refused there too, admitting only
// later) keeps them counted from the send.
func TestNamedSecond(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A reading of a request sent at sent ms, answered took ms later,
	// naming the whole second end (ms), left of 20.
	reading := func(sent, took, end, left int) (Reading, time.Time) {
		return Reading{Told: true, Limit: 20, Left: left, Coarse: true,
			Reset: time.Duration(end-sent-took) * time.Millisecond, Took: time.Duration(took) * time.Millisecond}, at(sent)
	}
	type step struct {
		sent, took, end, left int
		refused               bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  bool
	}{
		{"refused at the end from the send, admitted at the second", []step{
			{1019, 50, 2000, 5, false}, // held: the end 1950 (from the send), the second 2000
			{1969, 0, 2000, 0, true},   // refused after 1950, the same second named
			{2000, 50, 3000, 19, false},
		}, true},
		{"refused there too, admitted only past the second", []step{
			{1019, 50, 2000, 5, false},
			{1969, 0, 2000, 0, true},
			{2000, 0, 2000, 0, true},
			{2730, 50, 3000, 19, false},
		}, false},
		{"admitted at the second with no refusal before", []step{
			{1019, 50, 2000, 5, false},
			{2000, 50, 3000, 19, false},
		}, false},
		{"refused before the end held", []step{
			{1019, 50, 2000, 5, false},
			{1900, 0, 2000, 0, true},
			{2000, 50, 3000, 19, false},
		}, false},
	} {
		var n namedSecond
		var held time.Time
		for _, s := range tc.steps {
			r, sent := reading(s.sent, s.took, s.end, s.left)
			n.weigh(r, sent, held, s.refused)
			n.held()
			held = sent.Add(r.Reset) // the end the window holds, counted from the send
		}
		if n.on != tc.want {
			t.Errorf("%s: counted from the arrival %v, want %v", tc.name, n.on, tc.want)
		}
	}
}

// TestWidenedNamed: counted from the arrival, a whole-second reset on a
// short window gains the answer's time; not so counted, or widened, not.
func TestWidenedNamed(t *testing.T) {
	r := Reading{Told: true, Limit: 20, Left: 3, Coarse: true, Reset: 900 * time.Millisecond, Took: 50 * time.Millisecond}
	var w window
	if got := w.widened(r).Reset; got != 900*time.Millisecond {
		t.Errorf("not yet shown: reset %v, want 900ms", got)
	}
	w.named.on = true
	if got := w.widened(r).Reset; got != 950*time.Millisecond {
		t.Errorf("counted from the arrival: reset %v, want 950ms", got)
	}
	long := r
	long.Reset = 30 * time.Second
	if got := w.widened(long).Reset; got != 31*time.Second {
		t.Errorf("a long window: reset %v, want 31s (widened, the answer's time not added)", got)
	}
}
