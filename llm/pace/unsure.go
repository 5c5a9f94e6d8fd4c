package pace

// Refusals about tokens that hold every request: a token limit refuses a
// big request while smaller ones still fit, so its refusal holds only its
// own request; but once the window is spent for every size, the others
// sent meanwhile are refused as well, in a flood.

// bigOnes reports whether the requests refused without a word of which
// limit (p's the newest) have been much bigger than those the lane sends:
// on average twice or more. A token limit refuses the big ones first, and
// then, its window full, small ones too; a request limit refuses any
// alike. ln.mu is held.
func (ln *lane) bigOnes(p *Permit) bool {
	ln.unsure.n++
	ln.unsure.tokens += p.tokens
	return ln.req.count > 0 && ln.tok.count > 0 && ln.unsure.tokens/ln.unsure.n >= 2*ln.tok.count/ln.req.count
}

// locksAll reports whether a refusal about tokens, of p, shows the
// server's token window spent for every request, so that the whole lane
// holds for it as for a refusal about requests: a request no bigger than
// the lane sends on average was refused with a hint of lockout or longer.
// Otherwise smaller requests may fit before it does. (A sliding log of
// 120,000 tokens a minute that tells only Retry-After, spent at the
// opening, refused the requests waiting one by one, each for its own
// hint: 9.6% of all requests refused, now 1.2%.) ln.mu is held.
func (ln *lane) locksAll(p *Permit, o Outcome) bool {
	return o.Hint >= lockout && p.tokens*ln.req.count <= ln.tok.count
}
