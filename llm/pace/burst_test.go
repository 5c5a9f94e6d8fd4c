package pace

import (
	"testing"
	"time"
)

// TestBurstReadingsReordered: of five requests sent within a millisecond,
// on a real clock microseconds apart, the newest send's reading comes
// first with the most left (the server counted it first). It tells of
// itself only, not of the four sent just before it: room for one, not for
// the five it says are left. As the others' readings come, the one that
// left the least tells the count after all five. (Taken as counting all
// five, a GCRA behind throttled got five more within 54 ms, room for two.)
func TestBurstReadingsReordered(t *testing.T) {
	const ms, us = time.Millisecond, time.Microsecond
	var w window
	w.sent(at(0), 1)
	w.read(Reading{Told: true, Limit: 6, Left: 5, Reset: time.Second}, at(0), at(52*ms), 1)
	for i := range 5 {
		w.sent(at(100*ms+time.Duration(i)*100*us), float64(2+i))
	}
	w.read(Reading{Told: true, Limit: 6, Left: 5, Reset: time.Second}, at(100*ms+400*us), at(152*ms), 6)
	if ok, _ := w.room(at(153*ms), 6, 2, 0); ok {
		t.Errorf("room for 2 after the newest send's reading came first with 5 left; want room for 1 at most: the 4 sent before it may not have been counted")
	}
	if ok, _ := w.room(at(153*ms), 6, 1, 0); !ok {
		t.Errorf("no room for 1 after a reading of 5 left, of which 4 may be taken by sends it did not count")
	}
	for i, left := range []int{3, 1, 4, 2} { // seqs 2, 3, 4, 5, each counted in some order after 6
		w.read(Reading{Told: true, Limit: 6, Left: left, Reset: time.Second}, at(100*ms+time.Duration(i)*100*us), at(153*ms), float64(2+i))
	}
	if w.left != 1 || w.seq != 6 {
		t.Errorf("left %v at count %v; want the least left, 1, with all 6 counted", w.left, w.seq)
	}
	if ok, _ := w.room(at(154*ms), 6, 1, 0); !ok {
		t.Errorf("no room for the 1 the burst left")
	}
	if ok, _ := w.room(at(154*ms), 6, 2, 0); ok {
		t.Errorf("room for 2 of the 1 the burst left")
	}
}

// TestPacedReadingsNoBurst: a reading of a request sent well apart from
// the others is taken as counting all sent before it.
func TestPacedReadingsNoBurst(t *testing.T) {
	const ms = time.Millisecond
	var w window
	for i := range 6 {
		w.sent(at(time.Duration(i)*50*ms), float64(1+i))
	}
	w.read(Reading{Told: true, Limit: 6, Left: 2, Reset: time.Second}, at(250*ms), at(300*ms), 6)
	if ok, _ := w.room(at(301*ms), 6, 2, 0); !ok {
		t.Errorf("no room for the 2 a reading left, of a request sent 50 ms after the one before")
	}
}
