package pace

import (
	"math"
	"time"
)

// What a window counts, when its headers do not say. RateLimit-*,
// X-RateLimit-* and an IETF policy with no unit are taken for requests
// (Reading.Guessed), but gateways that limit tokens send them too. A
// window's use (its size less what is left) is weighed against what the
// lane itself sent over the window: of requests, a few dozen; of tokens,
// some hundred times more. Use nearer the tokens (over the geometric mean
// of the two) is a vote for tokens; other clients' requests would have to
// be many times the lane's own to look so. Three votes for tokens, twice
// as many as against, and the window is taken for the token window, for
// the rest of the run unless the votes turn.

// unitGuess is a lane's judgment of its windows of no unit said.
type unitGuess struct {
	tok, req int  // votes
	tokens   bool // taken for tokens
}

// minOwn is how many of its own requests the lane must have sent over a
// window for its use to say anything.
const minOwn = 5

// weigh votes on r, the reading of a request sent at sentAt when the
// lane's counts were seqReq and seqTok, and reports whether the window
// is taken for tokens. ln.mu is held.
func (ln *lane) weigh(r Reading, sentAt time.Time, seqReq, seqTok, share float64) bool {
	g := &ln.units
	if !r.Told || r.Limit <= 0 {
		return g.tokens
	}
	period := ln.req.win.period
	if g.tokens {
		period = ln.tok.win.period // where these readings go
	}
	span := max(r.Window, r.Reset, period, time.Second)
	// What the lane sent, standing for share times as many (see Sharer).
	reqs := (seqReq - ln.req.win.log.countAt(sentAt.Add(-span))) * share
	toks := (seqTok - ln.tok.win.log.countAt(sentAt.Add(-span))) * share
	used := float64(r.Limit - r.Left)
	if reqs < minOwn || toks <= reqs || used <= 0 {
		return g.tokens
	}
	if used > math.Sqrt(reqs*toks) {
		g.tok++
	} else {
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
	tokens := ln.weigh(o.Requests, p.sent, p.seqReq, p.seqTok, max(p.share, 1))
	if tokens != was {
		// What the other window learned of these readings was wrong.
		if tokens {
			ln.req.win = window{log: ln.req.win.log}
		} else {
			ln.tok.win = window{log: ln.tok.win.log}
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
