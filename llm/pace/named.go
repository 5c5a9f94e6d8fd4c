package pace

import "time"

// A namedSecond is what a window's resets told as whole seconds of the
// clock (a Unix time in seconds, an HTTP-date), on windows too short to
// widen (see widened), have shown of where to count them from. Such a
// reset is taken as a delta from the send, a latency earlier than the
// second it names: a server that rounds its ends up to the second ends
// its window up to a second before it, and the lane is faster a latency
// early than late. Where a request sent at the end so counted, or after
// it, is refused with the same second named, the window had not ended
// there; where one sent at the second itself is then admitted, it ended
// at that second (the server cuts its ends down to it, as
// sethvargo/go-limiter's dates do), and the window's resets are counted
// from the arrival from then on, as the second itself (see weigh).
// (Counted from the send, go-limiter's 20 a second, its windows on whole
// seconds, answered in 50 ms, refused each second's first request 31 ms
// before its end: 2.1-4.2% of a run.)
type namedSecond struct {
	on      bool      // resets are counted from the arrival
	end     time.Time // the second the reset held named; zero: it named none
	next    time.Time // the second the reading being read names; zero: none
	suspect time.Time // a second named that a request sent at the end counted from the send was refused before; zero: none
}

// weigh takes in r, the reading of the answer to a request sent at sentAt,
// refused or not, before it is read; held is the end the window holds. A
// refusal of a request sent at that end or after, the same second named,
// makes the second suspect; a request admitted at the second, or within
// its own answer's time after it, with a later second named, shows the
// window ended there, and resets are counted from the arrival from then
// on. (A server whose ends lie well past the second it names, ulule's and
// go-limiter's windows opened at a key's first request 0.73 s into a
// second, refuses there too, and the lane's own following of its windows
// does better with the resets counted from the send: 1.11x, against 1.17x
// counted from the arrival once refused.)
func (n *namedSecond) weigh(r Reading, sentAt, held time.Time, refused bool) {
	n.next = time.Time{}
	if !r.Coarse || !r.Told || r.Reset <= 0 {
		return
	}
	named := sentAt.Add(r.Reset + r.Took)
	n.next = named
	switch {
	case n.on:
	case refused && r.Left == 0 && !n.end.IsZero() && !sentAt.Before(held) && named.Sub(n.end).Abs() < time.Second/2:
		n.suspect = named
	case !refused && !n.suspect.IsZero() && !sentAt.Before(n.suspect) && sentAt.Sub(n.suspect) <= max(r.Took, minTook) &&
		named.Sub(n.suspect) >= time.Second/2:
		n.on = true
	}
}

// minTook is the least time after a suspect second within which a request
// admitted shows the window ended at it (see weigh).
const minTook = 50 * time.Millisecond

// held notes that the reading being read is the one the window holds.
func (n *namedSecond) held() { n.end = n.next }
