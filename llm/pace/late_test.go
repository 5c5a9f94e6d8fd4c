package pace

import (
	"math"
	"testing"
	"time"
)

// minuteCounter is a sliding counter of limit a minute, its fixed windows
// ending on whole minutes from t0, as the tests' server: it counts each
// request sent, and tells what it counted with it (rounded up) and its
// reset, at the end of the next window, in whole seconds.
type minuteCounter struct {
	limit     int
	prev, cur float64
	k         int64
}

func (m *minuteCounter) take(sent time.Duration) Reading {
	if k := int64(sent / time.Minute); k != m.k {
		m.prev, m.cur = m.cur, 0
		if k > m.k+1 {
			m.prev = 0
		}
		m.k = k
	}
	m.cur++
	into := float64(sent%time.Minute) / float64(time.Minute)
	used := int(math.Ceil(m.prev*(1-into) + m.cur - 1e-9))
	reset := (time.Duration(m.k+2)*time.Minute - sent + time.Second - 1).Truncate(time.Second)
	return Reading{Told: true, Limit: m.limit, Left: max(m.limit-used, 0), Reset: reset, Window: time.Minute}
}

// TestCounterLateReadings: readings that come 90 s after their requests
// went, of a counter of a minute, are weighed against the lane's sends of
// the window before theirs, 2.5 minutes back: the tracker counts nothing
// besides the lane's own, as there is nothing.
func TestCounterLateReadings(t *testing.T) {
	const lag = 90 * time.Second
	srv := minuteCounter{limit: 24}
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
