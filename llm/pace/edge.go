package pace

import (
	"math"
	"time"
)

// Where a counter's fixed windows end, told in whole seconds. A reset
// so told may be rounded up, down or to the nearest second, so the end
// it places (see counter.read) is up to a second early, and the window
// before is weighed whole for a second past it (the counter's slack):
// of a counter of 100 per 10 s, a second of each ten held near empty.
// Readings sent within that second tell which it is: the server's count,
// there, is the lane's with its windows ending where placed, or a second
// later, which differ by what the window before weighs off in between. Two that
// say exact, none late, since the end last moved, and the end is taken as
// placed, its slack only the way to the server; one that says late, and
// it is not, until the end moves again.

// edgeVotes counts the readings that said the ends placed are exact, and
// those that said they are late.
type edgeVotes struct{ exact, late int }

// minEdgeGap is how many units apart the two counts must be for a
// reading to vote: the server rounds what the window before weighs.
const minEdgeGap = 2

// slack is how much earlier than the true one an end placed may be.
func (v edgeVotes) slack(guard, tick time.Duration) time.Duration {
	if v.exact >= 2 && v.late == 0 {
		return guard
	}
	return max(guard, tick)
}

// placed takes in edge, an end placed from a reading; the votes are
// for the end they weighed, and start afresh once it moves by more than
// the way to the server.
func (c *counter) placed(edge time.Time, guard time.Duration) {
	if !c.edge.IsZero() && c.length > 0 {
		off := edge.Sub(c.edge) % c.length
		if off < 0 {
			off += c.length
		}
		if min(off, c.length-off) > guard {
			c.votes = edgeVotes{}
		}
	}
	c.edge = edge
}

// vote weighs a reading that counted used, of the request sent at
// sentAt when the lane's count was seq, if it went within the second
// after an end placed in whole seconds, and no one else's units were
// counted by the reading before.
func (c *counter) vote(log *sendLog, used float64, sentAt time.Time, seq float64, guard time.Duration) {
	if c.tick < time.Second || c.length <= 0 || c.blurred() || c.excess >= 1 {
		return
	}
	if into := sentAt.Sub(c.start(sentAt)); into <= guard || into >= c.tick {
		return
	}
	later := *c
	later.edge = c.edge.Add(c.tick)
	exact, late := c.ownWith(log, sentAt, seq, guard), later.ownWith(log, sentAt, seq, guard)
	switch {
	case math.Abs(late-exact) < minEdgeGap:
	case math.Abs(used-exact) < math.Abs(used-late):
		c.votes.exact++
	default:
		c.votes.late++
	}
}

// refine makes the length found by two moves of the reset (each within
// the resets' resolution, tens of milliseconds) as exact as the ends told
// far apart: edge, k whole lengths after the first end told finely, makes
// it their distance over k. The fixed windows' ends are counted from the
// newest reading's, up to two lengths on, but the sends of a window gather
// at its start, and a length a millisecond short put them in the window
// before from a few windows on (TestCounterRefined).
func (c *counter) refine(edge time.Time) {
	if c.origin.IsZero() {
		c.origin = edge
		return
	}
	d := edge.Sub(c.origin)
	if k := math.Round(float64(d) / float64(c.length)); k >= minRefine {
		c.length = time.Duration(float64(d) / k)
	}
}

// minRefine is how many lengths apart two ends must be to refine the
// length: each may be early by the way to the server, so k lengths apart
// tell it within that way over k.
const minRefine = 4
