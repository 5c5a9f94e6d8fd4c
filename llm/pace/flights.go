package pace

import (
	"slices"
	"time"
)

// flightState is what became of a request in the flight log.
type flightState uint8

const (
	noFlight  flightState = iota // an empty slot of the log
	flying                       // not answered yet
	tookIt                       // admitted
	refusedIt                    // refused
	lostIt                       // no word from the server
)

// flightLen is how many of the latest requests the flight log keeps.
const flightLen = 256

// flight is one request in the log.
type flight struct {
	seq        int64
	sent, done time.Time
	state      flightState
	busy       int // admitted requests in flight when it went; -1: not known yet
}

// unknownBusy is the busy count of a refusal whose count is in doubt.
const unknownBusy = -2

// flights is the log of the lane's latest requests, in the order sent.
type flights struct {
	log   [flightLen]flight
	next  int64         // the number of the next request sent
	ripe  int64         // every request before it has its busy count
	quick time.Duration // the longest round trip of a refusal lately
}

func (f *flights) send(now time.Time) int64 {
	s := f.next
	f.next++
	f.log[s%flightLen] = flight{seq: s, sent: now, state: flying, busy: -1}
	return s
}

// oldest is when the oldest request not yet answered went; zero: none.
func (f *flights) oldest() time.Time {
	for s := max(f.ripe, f.next-flightLen); s < f.next; s++ {
		if r := f.at(s); r != nil && r.state == flying {
			return r.sent
		}
	}
	return time.Time{}
}

// last is when the latest request went; zero: none yet.
func (f *flights) last() time.Time {
	if r := f.at(f.next - 1); r != nil {
		return r.sent
	}
	return time.Time{}
}

// roundTrip is the median round trip of the admitted requests in the log;
// 0: none.
func (f *flights) roundTrip() time.Duration {
	var trips []time.Duration
	for i := range f.log {
		if r := &f.log[i]; r.state == tookIt {
			trips = append(trips, r.done.Sub(r.sent))
		}
	}
	if len(trips) == 0 {
		return 0
	}
	slices.Sort(trips)
	return trips[len(trips)/2]
}

// at returns request seq, or nil when the log no longer holds it.
func (f *flights) at(seq int64) *flight {
	if r := &f.log[seq%flightLen]; seq >= 0 && r.seq == seq && r.state != noFlight {
		return r
	}
	return nil
}

func (f *flights) answer(seq int64, now time.Time, st flightState) {
	if r := f.at(seq); r != nil && r.state == flying {
		r.state, r.done = st, now
		if st == refusedIt {
			f.quick = max(now.Sub(r.sent), f.quick-f.quick/8)
		}
	}
}

// ripen counts the busy count of each request in the order sent, once it
// and everything sent before it or at the same instant have been answered
// (requests sent at one instant may reach the server in any order), and
// passes it to judge.
func (f *flights) ripen(now time.Time, judge func(*flight)) {
	for f.ripe < f.next {
		r := f.at(f.ripe)
		if r == nil {
			f.ripe++
			continue
		}
		end, ready := f.instant(r, now)
		if !ready {
			return
		}
		for s := f.ripe; s < end; s++ {
			g := f.at(s)
			n, unsure := f.count(g, end, false)
			if g.busy = n; unsure && g.state == refusedIt {
				// Refused with one in hand, or with one just gone and
				// none: it tells nothing either way.
				g.busy = unknownBusy
			}
			judge(g)
		}
		f.ripe = end
	}
}

// instant returns the end of the run of requests sent at the same instant
// as r, the first not yet ripe, and whether they may ripen: all answered,
// and the instant past (more may go at it while it is now).
func (f *flights) instant(r *flight, now time.Time) (end int64, ready bool) {
	for end = f.ripe; end < f.next; end++ {
		g := f.at(end)
		if g == nil || !g.sent.Equal(r.sent) {
			break
		}
		if g.state == flying {
			return end, false
		}
	}
	return end, end < f.next || now.After(r.sent)
}

// count returns how many requests, other than r and numbered below end,
// were sent no later than r and admitted after r went (with upper, also
// those still in flight: the most r can have found in the server's
// hands). Otherwise only those answered a quick round trip after r went
// count, since an answer may take that long to come back after the server
// let the request go (a refusal comes back at once, so its round trip is
// the network's); one answered sooner may have left the server before r
// came, or not: unsure.
func (f *flights) count(r *flight, end int64, upper bool) (n int, unsure bool) {
	sure := r.sent.Add(f.quick)
	for s := max(end-flightLen, 0); s < end; s++ {
		g := f.at(s)
		if g == nil || g == r || g.sent.After(r.sent) {
			continue
		}
		switch {
		case upper && (g.state == flying || g.state == tookIt && g.done.After(r.sent)):
			n++
		case upper || g.state != tookIt || g.done.Before(r.sent):
		case g.done.After(sure):
			n++
		default:
			unsure = true
		}
	}
	return n, unsure
}

// inHand returns the most request seq can have found in the server's
// hands: those sent no later than it, admitted after it went or in flight.
func (f *flights) inHand(seq int64) int {
	r := f.at(seq)
	if r == nil {
		return 0
	}
	n, _ := f.count(r, f.next, true)
	return n
}

// evidence sums up the requests in the log whose busy count is known:
// the admitted ones of the whole log, the refused ones of its newer half.
type evidence struct {
	lo      int // the most an admitted one found in the server's hands (but for a few), plus one: it took that many at once
	hi      int // what most refused ones found at least (their median); 0: none refused
	refused int // how many were refused
	fewer   int // of those, how many found fewer than hi
	bursts  int // in how many bunches they were sent (see bunchGap)
	after   int // how many were admitted that were sent after the first of the refused ones
}

// consistent reports whether a cap explains the evidence: most refusals
// found one in hand at least, and more than any admitted request did; a
// few (a quarter) may have found fewer, since requests that cross on the
// way may be miscounted.
func (e evidence) consistent() bool {
	return e.refused == 0 || e.hi >= 1 && e.lo <= e.hi && 4*e.fewer <= e.refused
}

func (f *flights) evidence() evidence {
	var busy [flightLen]int
	var e evidence
	var first, last time.Time
	// Only the newer half's refusals: an older one would outlive the
	// admitted requests that contradicted it, as they leave the log.
	for s := max(f.next-flightLen/2, 0); s < f.next; s++ {
		if r := f.at(s); r != nil && r.busy >= 0 && r.state == refusedIt {
			busy[e.refused], e.refused = r.busy, e.refused+1
			if first.IsZero() {
				first = r.sent
			}
			if last.IsZero() || r.sent.Sub(last) > bunchGap {
				e.bursts++ // a new bunch (see bunchGap): sends microseconds apart are one
			}
			last = r.sent
		}
	}
	if e.refused > 0 {
		b := busy[:e.refused]
		slices.Sort(b)
		e.hi = b[len(b)/2]
		e.fewer, _ = slices.BinarySearch(b, e.hi)
	}
	took := 0
	for i := range f.log {
		if r := &f.log[i]; r.busy >= 0 && r.state == tookIt {
			busy[took], took = r.busy, took+1
			if !first.IsZero() && r.sent.After(first) {
				e.after++
			}
		}
	}
	if took > 0 {
		// The most, but for one in 32: an answer that came back late
		// makes a request look as if it found one more.
		b := busy[:took]
		slices.Sort(b)
		e.lo = b[len(b)-1-len(b)/32] + 1
	}
	return e
}
