package pace

import (
	"sort"
	"testing"
	"time"
)

// A lateReading is the reading of a request sent at sent, the lane's
// count seq with it, and when its answer comes.
type lateReading struct {
	r          Reading
	sent, back time.Duration
	seq        float64
}

// readAll reads the answers into w in the order they come (a stable sort:
// those that come at one instant in the order sent).
func readAll(w *window, answers []lateReading) {
	sort.SliceStable(answers, func(i, j int) bool { return answers[i].back < answers[j].back })
	for _, a := range answers {
		w.read(a.r, at(a.sent), at(a.back), a.seq)
	}
}

// TestReorderedCounter: a sliding counter of 20 a second with OpenAI's
// headers (its length not told, its resets in milliseconds, rounded up),
// its sends gathered at the ends the tracker holds, every 2 s, answered
// late. The one request sent between them (1.19 s), whose reset moved on
// by a second before the end held (2 s) was reached, is answered after
// the readings of the next two gathers (4.4 s late): by the send order it
// tells the counter, of a second, taken from the end of its fill at 0 s.
// Judged only by when the answers came, the window was followed as a
// fixed window of 2 s for a whole run, half its rate sent.
func TestReorderedCounter(t *testing.T) {
	ms := time.Millisecond
	srv := testCounter{limit: 20, length: time.Second}
	var w window
	var answers []lateReading
	send := func(sent, lag time.Duration, probe bool) {
		r := srv.take(sent)
		// OpenAI's: no window told, the reset in milliseconds, rounded up.
		r.Window = 0
		r.Reset = (time.Duration(srv.k+2)*srv.length - sent + ms - 1).Truncate(ms)
		seq := float64(len(answers) + 1)
		w.sent(at(sent), seq)
		if probe {
			w.probes++ // as the lane counts one sent to probe (see roomOrProbe)
		}
		answers = append(answers, lateReading{r, sent, sent + lag, seq})
	}
	for range 16 {
		send(0, 600*ms, false)
	}
	send(250*ms, 600*ms, false)
	send(500*ms, 600*ms, false)
	send(623*ms, 600*ms, true)
	send(873*ms-1, 600*ms, false) // its reset rounded up by near a millisecond
	send(1190*ms, 4400*ms, false) // the one that tells, answered last
	for range 16 {
		send(2040*ms, 600*ms, false)
	}
	for range 20 {
		send(4040*ms, 600*ms, false)
	}
	late := answers[20]
	readAll(&w, append(answers[:20:20], answers[21:]...))
	if w.ctr.length != 0 || !w.wall {
		t.Fatalf("before the late answer: counter %v, wall %v; want no counter yet, a wall of 2 s (the send order unseen)", w.ctr.length, w.wall)
	}
	readAll(&w, []lateReading{late})
	if d := w.ctr.length - time.Second; d.Abs() > ms/2 || !w.counting() || w.wall {
		t.Errorf("counter %v (followed %v), wall %v; want a counter of 1s within 0.5ms, followed, no wall", w.ctr.length, w.counting(), w.wall)
	}
}

// testLog is a sliding log of limit a length, as the tests' server
// (OpenAI's headers): it admits a request while fewer than limit were
// admitted in the length before, and tells what is left and when its
// newest unit leaves, rounded up to tick.
type testLog struct {
	limit    int
	length   time.Duration
	tick     time.Duration
	admitted []time.Duration
}

func (l *testLog) take(sent time.Duration) Reading {
	in := 0
	for _, a := range l.admitted {
		if a+l.length > sent {
			in++
		}
	}
	if in < l.limit {
		l.admitted, in = append(l.admitted, sent), in+1
	}
	reset := (l.admitted[len(l.admitted)-1] + l.length - sent + l.tick - 1).Truncate(l.tick)
	return Reading{Told: true, Limit: l.limit, Left: l.limit - in, Reset: reset}
}

// logLane sends to srv through w, each answer lag after its request.
type logLane struct {
	srv     testLog
	w       window
	answers []lateReading
}

func (l *logLane) send(sent, lag time.Duration, probe bool) {
	seq := float64(len(l.answers) + 1)
	l.w.sent(at(sent), seq)
	if probe {
		l.w.probes++ // as the lane counts one sent to probe (see roomOrProbe)
	}
	l.answers = append(l.answers, lateReading{l.srv.take(sent), sent, sent + lag, seq})
}

// TestReorderedLogMovesOnce: a sliding log of 100 a minute, filled in its
// first 10 s, probed at 42.45 s (refused: its reset says when the newest
// unit leaves, 69.9 s), and two requests sent at 60.05 s, whose readings
// come one before and one after that of a request sent later. Both tell
// the same move of the end, from the probe's on by 51 s before it was
// reached: one move, not two alike, and no counter.
func TestReorderedLogMovesOnce(t *testing.T) {
	ms := time.Millisecond
	l := logLane{srv: testLog{limit: 100, length: time.Minute, tick: 10 * ms}}
	for i := range 100 {
		l.send(time.Duration(i)*100*ms, 400*ms, false)
	}
	l.send(42450*ms, 0, true)
	l.send(60050*ms, 690*ms, false)
	l.send(60050*ms, 1040*ms, false) // answered after the next one
	l.send(60300*ms, 490*ms, false)
	readAll(&l.w, l.answers)
	if l.w.ctr.length != 0 {
		t.Errorf("counter of %v; want none (a sliding log)", l.w.ctr.length)
	}
}

// TestReorderedLogWholeLength: a sliding log of 10 per 2 s, filled by 1 s
// and probed at 1.5 s (refused: its newest unit leaves at 3 s), admits a
// request at 2.01 s, whose reading, its reset the whole length, comes
// after that of a later request: its end moved on from the probe's by
// about half the longest reset, before it was reached, as a counter's of
// 1 s would (see halved), but a reset of the whole length is what a log
// tells every request it admits, at any time after its newest unit.
func TestReorderedLogWholeLength(t *testing.T) {
	ms := time.Millisecond
	l := logLane{srv: testLog{limit: 10, length: 2 * time.Second, tick: ms}}
	for _, s := range []struct {
		at time.Duration
		n  int
	}{{0, 3}, {500 * ms, 3}, {time.Second, 4}} {
		for range s.n {
			l.send(s.at, 500*ms, false)
		}
	}
	l.send(1500*ms, 0, true)
	l.send(2010*ms, time.Second, false) // answered after the next ones
	for range 3 {
		l.send(2500*ms, 500*ms, false)
	}
	readAll(&l.w, l.answers)
	if l.w.ctr.length != 0 {
		t.Errorf("counter of %v; want none (a sliding log)", l.w.ctr.length)
	}
}
