package pace

import "time"

// Result is what became of an attempt, as far as pacing cares.
type Result int

const (
	Lost     Result = iota // no word from the server (a transport error, the caller gave up): says nothing
	Admitted               // the server answered other than with a rate-limit refusal: it took the request
	Refused                // a rate-limit 429
)

// An Outcome is what the caller tells of an attempt sent with a [Permit].
type Outcome struct {
	Result Result
	Tokens bool // Refused: about tokens, which holds only this request; otherwise about requests, which pauses the lane
	// Unsure: the refusal did not say which (an HTML page, a bare 429);
	// the lane takes it for tokens if the requests so refused have been
	// much bigger than those it sends (see bigOnes), else for requests.
	Unsure bool
	Hint   time.Duration // Refused: the 429's own Retry-After, never cut short; 0: none
	// FineHint: the hint came in a form finer than whole seconds
	// (retry-after-ms, Traefik's X-Retry-In): a second is then a second,
	// not the least Retry-After can say (see coarse).
	FineHint bool
	// What the response's headers said of the server's windows.
	Requests, TokenWindow Reading
	// Keyed: the attempt used one of several API keys, so its refusal and
	// windows speak of that key only; the caller rests the key instead.
	Keyed bool
	// Used: Admitted, the tokens the server counted (its usage); 0: not
	// told. The key's shared token budget is settled by it (see Sharer).
	Used int
}

// A Permit is one request's place in its lane, from Acquire to Done (or
// Release). A nil *Permit does nothing.
type Permit struct {
	lane   *lane
	tokens float64
	sent   time.Time
	seq    int64   // its number in the gate's flight log
	seqReq float64 // the lane's counts when it went, it included
	seqTok float64
	share  float64 // the processes it stands for in the estimators' counts (see Sharer): 1 alone
	free   func()  // gives back its slot shared with other processes; nil: none
	probe  *window // the window it went to probe (see roomOrProbe); nil: none
	done   bool
}

// Sent is when the lane let the request go; zero for a nil permit. Its
// caller counts the resets its answer wrote as times of the clock from it.
func (p *Permit) Sent() time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.sent
}

// Release gives the permit back with no outcome to tell (the caller's
// context ended). It does nothing after Done or Release.
func (p *Permit) Release() { p.Done(Outcome{Result: Lost}) }

// Done tells how the attempt went and gives the permit back; it returns
// how long this request should wait before its next attempt: the hint of
// a refusal, or the lane's hold when the server gave none; 0 when the lane
// has nothing to say (the caller then backs off as it would).
// Only the first call counts.
func (p *Permit) Done(o Outcome) (wait time.Duration) {
	if p == nil || p.done {
		return 0
	}
	p.done = true
	ln := p.lane
	ln.mu.Lock()
	before := ln.until
	defer func() {
		until := ln.until
		ln.mu.Unlock()
		if p.free != nil {
			p.free()
		}
		ln.spread(before, until)
		ln.settle(p, o)
	}()
	ln.gate.inFlight--
	defer ln.wake()
	now := ln.l.now()
	ln.sortUnits(p, &o)
	ln.widen(p, &o)
	if o.Result == Admitted || o.Result == Refused {
		ln.answers.add(now, o.Result == Refused)
	}
	switch o.Result {
	case Admitted:
		ln.admitted(p, now)
	case Refused:
		wait = ln.refused(p, now, o)
	default:
		ln.answered(p, now, lostIt)
		return 0
	}
	ln.req.opening = 0 // the server answered (see Limiter.opening)
	if !o.Keyed && !ln.contradicted(o, now) {
		ln.req.win.read(o.Requests, p.sent, now, p.seqReq)
		ln.taken(o, p.sent)
		ln.tok.win.read(o.TokenWindow, p.sent, now, p.seqTok)
		ln.req.est.stretch(ln.req.win.period)
		ln.tok.est.stretch(ln.tok.win.period)
	}
	ln.logged("rpm", &ln.req, now, 1)
	ln.logged("tpm", &ln.tok, now, 0)
	return wait
}

// admitted counts an admitted request. ln.mu is held.
func (ln *lane) admitted(p *Permit, now time.Time) {
	ln.req.est.admitted(now, p.sent, p.share)
	ln.tok.est.admitted(now, p.sent, p.tokens*p.share)
	ln.answered(p, now, tookIt)
}

// refused handles a 429 and returns how long its request waits, never
// less than its hint. One about requests pauses the whole lane for its
// hint (the estimator's hold, with none, or with a one-second hint once a
// pace has held or was told, see coarse; no one, for noise the estimator's level
// explains); one about tokens holds only its own request, since smaller ones
// may still fit. A refusal the server's claim does not bear out teaches
// the pace nothing, but where the claim is soon over and the lane's whole
// count bears it out (see believed); one at a concurrency cap (see
// concurrency) neither, and holds only its own request: the gate keeps
// the others under the cap. ln.mu is held.
func (ln *lane) refused(p *Permit, now time.Time, o Outcome) time.Duration {
	contra := !o.Keyed && ln.contradicted(o, now)
	if o.Keyed || p.probe != nil || (contra && !ln.believed(o, now)) {
		// The key rests, the others go on; or it costs its own Retry-After,
		// no more; or a probe found the hold real (see roomOrProbe).
		ln.answered(p, now, lostIt)
		return o.Hint
	}
	if o.Unsure {
		o.Tokens = ln.bigOnes(p)
	}
	q, r := ln.about(o)
	n := p.share // what it stands for, as it was counted sent
	if o.Tokens {
		n = p.tokens * p.share
	}
	if contra {
		r.Told = false // see believed: the refusal is believed, not its claim
	}
	ln.tok.refund(now, p.sent, p.tokens, o.Tokens)
	q.est.stayed = q.est.tracked > 0 && q.win.late.stay > 0
	q.win.lateRefused()
	q.est.shown, q.est.fine, q.est.tracked = r.Told, o.FineHint, q.win.admitsTold(r, n)
	hint, carried := q.pauseHint(p, o, r)
	var hold, pause time.Duration
	capped := ln.capped(p, now, o)
	if !capped {
		hold = q.est.refused(now, p.sent, n, hint)
		if !q.est.explained && !carried { // noise the level accounts for costs its own request its hint, the others nothing
			pause = max(hold, hint)
		}
	}
	hold = max(hold, o.Hint)
	switch {
	case capped:
		hold = max(hold, time.Millisecond) // it waits for its hint, or a slot; the caller pauses no one
	case !o.Tokens || ln.locksAll(p, o):
		ln.pause(pause)
	}
	if hold == 0 && ln.l.cfg.Adapt {
		// Old news: the lane has cut for it already. The request goes
		// again after the pause, at the pace now, not after a backoff
		// of its own (which the client would make the lane's pause).
		hold = max(ln.until.Sub(now), time.Millisecond)
	}
	return hold
}

// contradicted reports whether the answer claims a window is spent that
// the lane's own count of what it sent over the window's period as known
// so far says is not (see spentClaim): the claim is then not believed.
// Over a period longer than the lane's count holds, it is not believed
// only where the window's newest reading had room for it too (see
// quantity.contradicts). For a refusal, the window it was about is
// weighed; for any other answer, either. ln.mu is held.
func (ln *lane) contradicted(o Outcome, now time.Time) bool {
	req := ln.req.contradicts(o.Requests, now)
	tok := ln.tok.contradicts(o.TokenWindow, now)
	switch {
	case o.Result != Refused:
		return req || tok
	case o.Tokens:
		return tok
	}
	return req
}

// history is what was sent over the last two minutes or so, by second:
// a sliding counter of a minute reaches two (its resets do).
type history struct {
	secs  [128]float64
	stamp [128]int64 // the Unix second each slot holds
}

func (h *history) add(now time.Time, n float64) {
	s := now.Unix()
	i := s % int64(len(h.secs))
	if h.stamp[i] != s {
		h.stamp[i], h.secs[i] = s, 0
	}
	h.secs[i] += n
}

// sum returns what was sent over the last period (the whole history for
// 0), counted in whole seconds and a second more, so that a window that
// began in the last second's slot is all in; known is false for a period
// longer than the history holds: what was sent over it is not known.
func (h *history) sum(now time.Time, period time.Duration) (total float64, known bool) {
	span, known := int64(len(h.secs)), true
	if period > 0 {
		need := int64((period+time.Second-1)/time.Second) + 1
		span, known = min(span, need), need <= span
	}
	s := now.Unix()
	for i, st := range h.stamp {
		if s-st < span {
			total += h.secs[i]
		}
	}
	return total, known
}

// contradicts reports whether r claims q's window is spent although the
// lane's own count says it is not (see spentClaim). Over a period longer
// than the count holds, the count is of its last part only, and the claim
// is not believed only where the window's newest reading had room for
// a quarter of what it says was used (as spentClaim's own count must
// reach a quarter of it): a sliding counter of 12,000 tokens a minute, its
// resets two minutes out, was filled at the opening, and 66 s on the
// lane's count held nothing of it; a probe's refusal there, told true, was
// taken for a false claim, and the window for a fixed one of two minutes
// (1.63x). A window of six minutes with 999,000 left a second before, said
// spent, is not.
func (q *quantity) contradicts(r Reading, now time.Time) bool {
	own, known := q.own.sum(now, q.win.period)
	if !spentClaim(r, q.win.most, own) {
		return false
	}
	return known || 4*q.win.left >= float64(max(r.Limit, q.win.most)-r.Left)
}

// about returns the quantity a refusal is about, and its window's reading.
func (ln *lane) about(o Outcome) (*quantity, Reading) {
	if o.Tokens {
		return &ln.tok, o.TokenWindow
	}
	return &ln.req, o.Requests
}

// believed reports whether a refusal whose claim of a spent window the
// lane's count over the window's period contradicts is believed all the
// same, though not its claim: where the claim says the window resets no
// later than the refusal's own hint, or within a second, and the lane's
// count over all it remembers (two minutes) bears the claim out, the
// window's length being unknown. (A GCRA of 100 per 10 s, told GitHub's
// way with whole-second resets, claimed a spent window that the count of
// the second before contradicted: every other request refused for 1.5 s
// at a time taught the pace nothing, 13% refused.) The refusal then
// pauses the lane and teaches the pace as a 429 with no headers would.
// So it does where most answers of about the last second were refusals
// (see tally.dense), whatever the lane's count says: 7 of the 8 the
// opening sent at once, to that GCRA with no burst, refused and refused
// again a second later, taught nothing until 26 had been sent (4.1% of
// the run refused, now 2.2%). A gateway's random 429s that claim a spent
// window, resetting in a second or in minutes, the lane having sent a
// fraction of the limit in all, still cost only their own Retry-After.
func (ln *lane) believed(o Outcome, now time.Time) bool {
	q, r := ln.about(o)
	all, _ := q.own.sum(now, 0)
	return r.Reset <= max(o.Hint, minSpan) && (!spentClaim(r, q.win.most, all) || ln.answers.dense())
}

// coarse reports whether a 429's hint is the least a hint in whole
// seconds can say, one second: it says when that request may go again (and
// it waits so long), but of a limit of many a second, little of when the
// others may: a bucket, a GCRA or a sliding window has room again in a
// fraction of it, and a second's pause of the whole lane is a second of
// sending lost to each refusal. Once a pace has held, or when the user
// told the limit and the search is on, the lane pauses for the estimator's own hold instead,
// its pace cut; a fixed window still spent refuses the next request with
// a hint of its own. (Told 20 a second, a sliding counter refuses the
// first request of the second window by 19 ms; its Retry-After of 1 held
// the lane a whole second, 3% of a 30 s run. Sparing the lane
// as soon as there is any pace made token limits with no headers take up
// to 3x in one run in three: the pauses were what held them back.)
func coarse(hint time.Duration) bool { return hint == time.Second }
