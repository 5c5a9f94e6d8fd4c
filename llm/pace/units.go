package pace

import "math"

// What a window counts, when its headers do not say. RateLimit-*,
// X-RateLimit-* and an IETF policy with no unit are taken for requests
// (Reading.Guessed), but gateways that limit tokens send them too. How
// much a window's use (its size less what is left) grew from one reading
// to a later one is weighed against what the lane itself sent between
// the two: of requests, a few; of tokens, some hundred times more. Growth
// nearer the tokens (over the geometric mean of the two) is a vote for
// tokens; other clients' requests would have to be many times the lane's
// own to look so. Growth under half the requests sent says nothing: room
// came back between (a bucket refilling, a window's wall). Three votes
// for tokens, twice as many as against, and the window is taken for the
// token window, for the rest of the run unless the votes turn. (Weighing
// a reading's use itself against what the lane sent over a guess of the
// window's length took GitHub's headers for tokens: a GCRA of 100 per
// 10 s, whose remaining is a request or none, was used 100 of a second's
// 8 requests and 400 tokens.)

// unitGuess is a lane's judgment of its windows of no unit said.
type unitGuess struct {
	tok, req int      // votes
	tokens   bool     // taken for tokens
	from     unitMark // the reading growth counts from
}

// unitMark is a reading weighed: its use, and the lane's counts of units
// sent when its request went.
type unitMark struct {
	used, reqs, toks float64
	limit            int // the window's size said: another's readings count from afresh
	ok               bool
}

// minOwn is how many of its own requests the lane must have sent between
// two readings for the growth in use to say anything.
const minOwn = 3

// weigh votes on r, the reading of a request sent when the lane's counts
// were seqReq and seqTok, and reports whether the window is taken for
// tokens. ln.mu is held.
func (ln *lane) weigh(r Reading, seqReq, seqTok, share float64) bool {
	g := &ln.units
	if !r.Told || r.Limit <= 0 {
		return g.tokens
	}
	used := float64(r.Limit - r.Left)
	now := unitMark{used, seqReq, seqTok, r.Limit, true}
	from := g.from
	switch {
	case !from.ok || used < from.used || r.Limit != from.limit:
		g.from = now // room came back, or another window told: growth counts from here
		return g.tokens
	case seqReq < from.reqs:
		return g.tokens // sent before the mark, answered after it
	}
	// What the lane sent, standing for share times as many (see Sharer).
	reqs, toks := (seqReq-from.reqs)*share, (seqTok-from.toks)*share
	if reqs < minOwn || toks <= reqs {
		return g.tokens
	}
	g.from = now
	switch grew := used - from.used; {
	case grew > math.Sqrt(reqs*toks):
		g.tok++
	case grew >= reqs/2:
		g.req++
	}
	g.tokens = g.tok >= 3 && g.tok > 2*g.req
	return g.tokens
}

// sortUnits moves a reading of no unit said to the token window when the
// lane takes it for one (see weigh), and with it a refusal that did not
// say which limit. ln.mu is held.
func (ln *lane) sortUnits(p *Permit, o *Outcome) {
	if !o.Requests.Guessed || o.TokenWindow.Told || o.Keyed {
		return
	}
	was := ln.units.tokens
	tokens := ln.weigh(o.Requests, p.seqReq, p.seqTok, max(p.share, 1))
	if tokens != was {
		// What the other window learned of these readings was wrong.
		// What the user told of each stays (see quantity.toldBucket).
		if tokens {
			ln.req.win = window{log: ln.req.win.log, told: ln.req.win.told}
		} else {
			ln.tok.win = window{log: ln.tok.win.log, told: ln.tok.win.told}
		}
	}
	switch {
	case tokens:
		o.TokenWindow, o.Requests = o.Requests, Reading{}
		if o.Result == Refused && o.Unsure {
			o.Unsure, o.Tokens = false, true
		}
	case o.Result == Refused && o.Unsure && ln.units.req >= 3:
		o.Unsure = false // its window is taken for requests, as its votes say
	}
}
