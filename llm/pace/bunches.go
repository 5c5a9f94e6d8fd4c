package pace

import "time"

// bunchGap is how close sends go to be one bunch (see singles, and the
// bunches of refusals a cap needs: flights.evidence): on the real clock
// the slow start's requests go microseconds apart, not at one instant.
// (Counted as instants, the opening's three refusals of four at the real
// nginx with no burst showed a cap of 1 alone, and the lane held to it
// for 2.4 s.)
const bunchGap = 5 * time.Millisecond

// singles returns the rate the server took at from the first bunch of
// requests in the log, of which it took one and refused others, to the
// last such, all answered: full at each (it refused one), it took one
// more at each since, so it refills that fast at least. 0 when fewer than
// two such bunches came, or when one bunch was taken two or more of: a
// burst, which says nothing of how fast it refills. (A leaky bucket with
// no burst, nginx's limit_req by default, takes one of each bunch the
// slow start sends, 250 ms apart: 4 a second at least, where what it took
// in the opening's first second, 2, cut nginx's 10 a second to 135/min.)
func (f *flights) singles() float64 {
	var first, last, at time.Time
	n, took, nays := 0, 0, 0
	end := func() bool { // ends the bunch at; false: a burst
		switch {
		case took >= 2:
			return false
		case took == 1 && nays >= 1:
			if n++; first.IsZero() {
				first = at
			}
			last = at
		}
		return true
	}
	prev := time.Time{}
	for s := max(f.next-flightLen, 0); s < f.next; s++ {
		r := f.at(s)
		if r == nil {
			continue
		}
		if r.state == flying {
			break
		}
		if prev.IsZero() || r.sent.Sub(prev) > bunchGap {
			if !prev.IsZero() && !end() {
				return 0
			}
			at, took, nays = r.sent, 0, 0
		}
		prev = r.sent
		switch r.state {
		case tookIt:
			took++
		case refusedIt:
			nays++
		}
	}
	if !prev.IsZero() && !end() {
		return 0
	}
	if n < 2 || !last.After(first) {
		return 0
	}
	return float64(n-1) / last.Sub(first).Seconds()
}
