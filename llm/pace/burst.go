package pace

import "time"

// together is how close two sends of the lane may go and still reach the
// server in either order: a burst's, that a real clock sends microseconds
// apart and a fake one in one instant.
const together = 5 * time.Millisecond

// A burst is the lane's sends within together of the first of them read,
// as their readings come. The server counted them in an order nobody
// knows, so the reading of one need not have counted those sent just
// before it. What a reading must have counted of the burst: its own units;
// as much as the room known before the burst less what it left (each unit
// counted leaves one less, and a refill only more); and, of the one that
// left the least so far, counted after all the others read, their units
// too, and as many as it has less left than the one that left the most.
// That one tells the most. (The newest send's reading came first, of five
// sent in the same millisecond: taken to have counted all five, with five
// left, the lane sent five more within 54 ms into a GCRA that had room for
// two, and the refusals cut the pace to 0.85 of the limit: throttled on a
// real clock, 1.43x.)
type burst struct {
	at     time.Time // when the burst's first send read went; zero: none
	base   float64   // the lane's count before the burst
	top    float64   // the count at the newest send of it read
	prior  float64   // the room known before it; -1: none known
	own    float64   // the units of its requests read
	most   float64   // the most a reading of it left, and the units of that request
	ofMost float64
	least  float64 // the least a reading of it left
}

// near reports whether a request sent at sentAt is of the burst held.
func (b *burst) near(sentAt time.Time) bool {
	return !b.at.IsZero() && sentAt.Sub(b.at).Abs() <= together
}

// open starts a burst from the reading r of a request sent at sentAt, when
// the count was seq, and returns the count it may be taken to have
// counted. prior is the room known before the burst (-1: none). Where the
// log does not hold the send, there is no burst to tell.
func (b *burst) open(l *sendLog, r Reading, sentAt time.Time, seq, prior float64) float64 {
	i, ok := l.find(seq)
	if !ok || !l.at[i].Equal(sentAt) {
		*b = burst{}
		return seq
	}
	before := l.floor
	if i > 0 {
		before = l.cum[i-1]
	}
	base := min(l.countAt(sentAt.Add(-together)), before)
	*b = burst{at: sentAt, base: base, top: base, prior: prior, most: -1, least: float64(r.Left) + 1}
	return b.join(r, seq, l.units(i))
}

// join adds r, the reading of a request of own units of the burst, sent
// when the count was seq, and returns the count the least left may be
// taken to have counted.
func (b *burst) join(r Reading, seq, own float64) float64 {
	left := float64(r.Left)
	b.own += own
	b.top = max(b.top, seq)
	if left > b.most {
		b.most, b.ofMost = left, own
	}
	b.least = min(b.least, left)
	counted := max(b.own, b.ofMost+b.most-b.least)
	if b.prior >= 0 {
		counted = max(counted, b.prior-b.least)
	}
	return min(b.base+counted, b.top)
}

// inBurst takes r, a reading of a request sent at sentAt when the count
// was seq, into the burst held, and returns it as the burst tells it: the
// least left, what that counted, and the burst's newest send and reset. ok
// is false when it is of no burst held, or tells no more than the reading
// held (an older request's, which left no less).
func (w *window) inBurst(r Reading, sentAt time.Time, seq float64) (_ Reading, _ time.Time, _ float64, ok bool) {
	if !w.burst.near(sentAt) || w.reset.IsZero() || w.rolled(r, sentAt) {
		return r, sentAt, seq, false
	}
	left, own := r.Left, 1.0
	if i, ok := w.log.find(seq); ok {
		own = w.log.units(i)
	}
	seq = w.burst.join(r, seq, own)
	if held := w.reset.Sub(w.at) - w.guard(); left >= int(w.left) {
		if sentAt.Before(w.at) {
			return r, sentAt, seq, false
		}
		r.Left, r.Reset = int(w.left), max(r.Reset, held)
	} else if sentAt.Before(w.at) {
		r.Reset, sentAt = max(r.Reset-w.at.Sub(sentAt), held), w.at
	}
	return r, sentAt, seq, true
}

// prior is the room the tracker knew of just before a send at sentAt, as
// the newest reading left it, less what the lane sent since that reading
// and before then; the limit when nothing was read; -1 when neither is
// known.
func (w *window) prior(r Reading, sentAt time.Time) float64 {
	if !w.reset.IsZero() && w.at.Before(sentAt.Add(-together)) && sentAt.Before(w.reset) {
		return w.left - max(w.log.countAt(sentAt.Add(-together))-w.seq, 0)
	}
	if l := max(r.Limit, w.limit); l > 0 {
		return float64(l)
	}
	return -1
}
