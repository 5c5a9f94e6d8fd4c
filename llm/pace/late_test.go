package pace

import (
	"math"
	"testing"
	"time"
)

// testCounter is a sliding counter of limit a length, its fixed windows
// ending on whole lengths from t0, as the tests' server (IETF's headers):
// it counts each request sent, and tells what it counted with it (rounded
// up), its length, and its reset, at the end of the next window, in whole
// seconds (rounded up).
type testCounter struct {
	limit     int
	length    time.Duration
	prev, cur float64
	k         int64
	down      bool // resets rounded down, not up
}

func (m *testCounter) take(sent time.Duration) Reading {
	if k := int64(sent / m.length); k != m.k {
		m.prev, m.cur = m.cur, 0
		if k > m.k+1 {
			m.prev = 0
		}
		m.k = k
	}
	m.cur++
	into := float64(sent%m.length) / float64(m.length)
	used := int(math.Ceil(m.prev*(1-into) + m.cur - 1e-9))
	reset := (time.Duration(m.k+2)*m.length - sent + time.Second - 1).Truncate(time.Second)
	if m.down {
		reset = (time.Duration(m.k+2)*m.length - sent).Truncate(time.Second)
	}
	return Reading{Told: true, Limit: m.limit, Left: max(m.limit-used, 0), Reset: reset, Window: m.length}
}

// TestCounterLateReadings: readings that come 90 s after their requests
// went, of a counter of a minute, are weighed against the lane's sends of
// the window before theirs, 2.5 minutes back: the tracker counts nothing
// besides the lane's own, as there is nothing.
func TestCounterLateReadings(t *testing.T) {
	const lag = 90 * time.Second
	srv := testCounter{limit: 24, length: time.Minute}
	var w window
	type pending struct {
		r    Reading
		sent time.Duration
		seq  float64
	}
	var inFlight []pending
	most := 0.0
	for i := range 100 {
		sent := time.Duration(i) * 3 * time.Second // 20 a minute
		for len(inFlight) > 0 && inFlight[0].sent+lag <= sent {
			p := inFlight[0]
			inFlight = inFlight[1:]
			w.read(p.r, at(p.sent), at(p.sent+lag), p.seq)
			most = max(most, w.ctr.excess)
		}
		seq := float64(i + 1)
		w.sent(at(sent), seq)
		inFlight = append(inFlight, pending{srv.take(sent), sent, seq})
	}
	if !w.counting() {
		t.Fatalf("not followed as a counter")
	}
	if most >= 1 {
		t.Errorf("the tracker took up to %.1f of the server's count for others', want less than 1 (none are)", most)
	}
}

// TestCounterBlurred: a counter of 20 a second whose resets come in whole
// seconds (2 s, past its told length of 1 s, as no other kind's reach) is
// taken for a counter at once, but one whose fixed windows' ends it cannot
// place: its pace is held to 19 a second, which no phase of its windows
// refuses (the window before and this one hold 1 + 19 at most).
func TestCounterBlurred(t *testing.T) {
	const lag = 1500 * time.Millisecond
	srv := testCounter{limit: 20, length: time.Second}
	var q quantity
	q.est = newEstimator(20/1.03, true, t0)
	type pending struct {
		r    Reading
		sent time.Duration
		seq  float64
	}
	var inFlight []pending
	gap := time.Second / 19
	for i := range 19 * 10 {
		sent := time.Duration(i) * gap
		for len(inFlight) > 0 && inFlight[0].sent+lag <= sent {
			p := inFlight[0]
			inFlight = inFlight[1:]
			q.win.read(p.r, at(p.sent), at(p.sent+lag), p.seq)
		}
		r := srv.take(sent)
		q.count++
		q.win.sent(at(sent), q.count)
		inFlight = append(inFlight, pending{r, sent, q.count})
	}
	if q.win.ctr.length != time.Second || q.win.counting() {
		t.Errorf("counter %v, followed by its ends %v; want a counter of 1s, not followed by its ends", q.win.ctr.length, q.win.counting())
	}
	if p := q.pace(); p > 19 {
		t.Errorf("pace %.2f a second, want at most 19", p)
	}
}

// TestCounterOwnEarlyEnd: an end of a counter's window taken up to its
// slack early (resets in whole seconds) leaves the server, till the true
// end, in the window before, whose own window before still weighs a
// little: the tracker counts no less than the server does.
func TestCounterOwnEarlyEnd(t *testing.T) {
	ms := time.Millisecond
	var log sendLog
	n := 0.0
	for range 32 {
		n++
		log.add(at(500*ms), n, time.Hour)
	}
	for i := range 23 {
		n++
		log.add(at(60*time.Second+time.Duration(i)*2500*ms), n, time.Hour)
	}
	c := counter{length: time.Minute, edge: at(59750 * ms), slack: time.Second, tick: time.Second}
	now := at(119751 * ms)
	// The server's windows end on whole minutes: at 119.751 s it counts
	// the 23 of [60 s, 120 s) and the 32 of the minute before, weighed by
	// what is left of it.
	server := 23 + 32*(1-59751.0/60000)
	if got := c.own(&log, now, n); got < server {
		t.Errorf("own at 119.751 s = %.3f, want no less than the server's %.3f", got, server)
	}
}

// TestWallCoarseResets: a fixed minute whose resets come in whole seconds,
// rounded up, puts the end held up to a second past the true one; the
// first send of each minute, just past the true end, reached it: the
// window is a wall, not a counter whose reset moved before its end.
func TestWallCoarseResets(t *testing.T) {
	ms := time.Millisecond
	var w window
	seq := 0.0
	for k := range 5 {
		base := time.Duration(k) * time.Minute
		for _, off := range []time.Duration{20 * ms, 20300 * ms, 40300 * ms} {
			sent := base + off
			seq++
			w.sent(at(sent), seq)
			reset := (base + time.Minute - sent + time.Second - 1).Truncate(time.Second)
			w.read(Reading{Told: true, Limit: 24, Left: 24 - int(seq) + 3*k, Reset: reset, Window: time.Minute}, at(sent), at(sent+10*ms), seq)
		}
	}
	if w.ctr.length != 0 || !w.wall {
		t.Errorf("counter %v, wall %v; want no counter, a wall", w.ctr.length, w.wall)
	}
}
