package pace

import (
	"context"
	"math"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// takePaces waits for t's turn at the request pace and for its tokens at
// the token pace. A turn that has to wait for either stops holding its
// room in the windows meanwhile (see queue.go): it may wait long, a debt
// of a long prompt's, and others may use the room till then.
func (ln *lane) takePaces(ctx context.Context, t *turn) error {
	tokens, since := int(t.tokens), t.start
	if err := ln.take(ctx, t, &ln.req, 1, since); err != nil {
		return err
	}
	ln.mu.Lock()
	if l, now := ln.tok.lim, ln.l.now(); ln.tok.keptBySecond(float64(tokens)) && l.TokensAt(now)-float64(tokens) >= -2*ln.tok.secondsWorth() {
		// The own second keeps it to the pace (see inSecond): waiting for
		// the rate.Limiter as well, a second's sends lumped by long
		// prompts fell short of it by a tenth. Its turn is taken as a
		// debt: the limiter, starting empty, is a second's worth in debt
		// from the first second on, and the timing of sends within a
		// second takes it past that now and then (see
		// TestDebtBeyondASecond); a debt beyond two seconds' worth, of a
		// request longer than a second of the pace, it waits out as
		// every other does. The debt is taken when it is sent (see
		// send): room taken meanwhile sends it round again, and debts of
		// requests not sent held the limiter back from those that were
		// (told 40,000 tokens a 10 s, the long prompts that fitted at
		// the opening, all but one sent round, kept the one whose room
		// was kept from its turn for 2 s).
		t.owed = min(tokens, l.Burst())
		ln.mu.Unlock()
		return nil
	}
	ln.mu.Unlock()
	return ln.take(ctx, t, &ln.tok, tokens, since)
}

// take waits until q.lim holds n units (a full burst, for more) and takes
// them. A request bigger than the burst takes the rest as a debt that
// later requests wait out: the pace holds over time, as servers counting
// per window see it. Waiters do not queue: each sleeps until the units
// could be there and tries again, so a pace raised meanwhile is felt at
// once. One that has waited as long as its units take to earn (since it
// began to wait, at since) may take them ahead, as a debt, but only so far
// (see ahead). q.lim is read each time round: the estimator may replace
// it. Turns one at a time go a pace's spacing apart at least (see spaced).
func (ln *lane) take(ctx context.Context, t *turn, q *quantity, n int, since time.Time) error {
	for {
		ln.mu.Lock()
		l, now, wake := q.lim, ln.l.now(), ln.changed
		if l == nil || n <= 0 {
			ln.mu.Unlock()
			return nil
		}
		r, k := float64(l.Limit()), min(n, l.Burst())
		patience := time.Duration(float64(n) / r * float64(time.Second))
		if l.TokensAt(now) >= float64(k) || now.Sub(since) >= patience {
			res := l.ReserveN(now, k)
			if d := res.DelayFrom(now); d <= ahead(n, patience) {
				for left := n - k; left > 0; left -= l.Burst() {
					l.ReserveN(now, min(left, l.Burst()))
				}
				until := q.spaced(now.Add(d))
				ln.mu.Unlock()
				return ln.waitTurn(ctx, t, q, l, until)
			}
			res.CancelAt(now)
		}
		d := time.Duration((float64(k) - l.TokensAt(now)) / r * float64(time.Second))
		ln.pass(t, false)
		ln.mu.Unlock()
		if err := sleep(ctx, max(d, time.Millisecond), wake); err != nil {
			return err
		}
	}
}

// ahead is how far ahead a request of n units that waited its patience
// may take its turn: twice its patience, so that smaller ones do not
// starve it; for one unit a quarter second at most, since all are its
// size, and turns taken far ahead would hold the requests behind at the
// pace they were taken at, however it rose since.
func ahead(n int, patience time.Duration) time.Duration {
	if n == 1 {
		patience = min(patience, 125*time.Millisecond)
	}
	return 2*patience + time.Millisecond
}

// spaced returns the time of a turn the rate.Limiter gives at at, no
// sooner than a spacing of the pace now after the turn given before, when
// turns go one at a time (a burst of 1), and makes it the last given. The
// rate.Limiter alone spaces them so only while the pace holds: a turn
// taken at a pace is kept when the pace rises, but the limiter counts it
// as paid at the new pace from then on, and gives the next too soon after
// it. (A pace raised from 336/min to 451/min sent the next request 94 ms
// after the one before, and nginx's limit_req of 10 a second with no
// burst refused it: the refusals of a climb, most of the run's.)
func (q *quantity) spaced(at time.Time) time.Time {
	if l := q.lim; l.Burst() == 1 && l.Limit() > 0 && !q.turn.IsZero() {
		at = later(at, q.turn.Add(time.Duration(float64(time.Second)/float64(l.Limit()))))
	}
	q.turn = at
	return at
}

// waitTurn waits until the turn reserved at l, at until, unless the pace
// is dropped meanwhile (q.lim no longer l: a concurrency cap found, say),
// when the request goes at once.
func (ln *lane) waitTurn(ctx context.Context, t *turn, q *quantity, l *rate.Limiter, until time.Time) error {
	for {
		ln.mu.Lock()
		d, wake, dropped := until.Sub(ln.l.now()), ln.changed, q.lim != l
		if d > 0 && !dropped {
			ln.pass(t, false)
		}
		ln.mu.Unlock()
		if d <= 0 || dropped {
			return ctx.Err()
		}
		if err := sleep(ctx, d, wake); err != nil {
			return err
		}
	}
}

// sync makes the rate.Limiter keep to the estimator's pace, creating or
// dropping it as the pace becomes finite or none. burst 1 spreads requests
// one at a time; burst 0 (tokens) is a second's worth, starting empty: a
// full bucket would add a second's worth to the first window the server
// counts. Once the headers show a told window of longWindow or more that
// keeps no unit past its length (toldWindow), or a bucket refilling at
// the told rate (toldBucket), the burst is its worth (a bucket's size),
// starting full: the tracker holds the lane to what the server says it
// has left.
func (q *quantity) sync(now time.Time, burst int) {
	r := q.pace()
	if math.IsInf(r, 1) || q.lim == nil {
		q.turn = time.Time{} // no pace, or a new one: no turn given at it yet (see spaced)
	}
	switch {
	case math.IsInf(r, 1):
		q.lim = nil
		return
	case q.lim == nil && burst > 0:
		q.lim = rate.NewLimiter(rate.Limit(r), burst)
		return
	case q.lim == nil:
		q.lim = rate.NewLimiter(rate.Limit(r), max(1, int(r)))
		q.lim.ReserveN(now, q.lim.Burst())
		return
	}
	cut := r < float64(q.lim.Limit())
	if float64(q.lim.Limit()) != r {
		q.lim.SetLimitAt(now, rate.Limit(r))
	}
	b := burst
	if burst == 0 {
		b = max(1, int(r))
	}
	if cut {
		q.drain(now, b)
	}
	if worth, ok := q.followed(r); ok {
		b = max(b, worth)
		if !q.filled {
			// Shown the window now: as full as the tracker finds it. (A
			// pace moved since, or a window shown again after another's
			// reading, keeps what the limiter holds.)
			q.lim, q.filled, q.turn = rate.NewLimiter(rate.Limit(r), b), true, time.Time{}
			return
		}
	}
	if q.lim.Burst() != b {
		q.lim.SetBurstAt(now, b)
	}
}

// pace is the estimator's pace (lifted to the told rate, the margin off,
// where the headers show the told window to be a bucket: see lifted),
// held to the opening's until the first
// answer (see Limiter.opening), and, at a sliding counter whose fixed
// windows' ends the tracker cannot place (see counter.blurred), to one
// less than its limit a length: spread evenly, that many never fill it
// whatever its phase (the window before, weighed, and this one hold 1 +
// that many at most), where the told ceiling's 19.4 a second of 20 fills
// some windows whole, the next one's first send refused.
func (q *quantity) pace() float64 {
	r := q.lifted(q.est.pace())
	if w := &q.win; w.ctr.length > 0 && w.ctr.blurred() && w.limit > 1 {
		r = min(r, float64(w.limit-1)/w.ctr.length.Seconds())
	}
	if q.opening <= 0 || r <= q.opening {
		return r
	}
	return q.opening
}

// drain leaves q's limiter, its pace cut, holding no more than own, the
// burst of the pace alone: a cut follows a refusal, which says the window
// is spent whatever the tracker took it to have left, and a told window's
// worth held (see toldWindow) would let it go at once.
func (q *quantity) drain(now time.Time, own int) {
	if over := int(q.lim.TokensAt(now)) - own; over > 0 {
		q.lim.ReserveN(now, min(over, q.lim.Burst()))
	}
}

// toldWindow reports whether the server's headers show a window of the
// told limit (see window.toldLength) of longWindow or more that keeps no
// unit past its length, and its length. The tracker then follows what it
// has left, which the pace need not hold back: it holds the window's
// worth (see sync), and no second of the token pace is kept to it (see
// keptBySecond). A sliding counter's window (its resets reach past the
// length) is followed only as well as it is modelled: the pace keeps to
// a second's worth.
//
// The window must be the told one: its limit over the told rate, the
// length that gives it, is no more than a tenth past the longest reset
// seen. A longer window's headers (a limit an hour, with a told limit a
// minute) would leave the told one held by nothing. Nor is it taken from
// headers that tell several windows (Kong's -Second beside its -Minute):
// the tracker follows the one binding at each answer, and a minute's
// worth at once would overrun the second.
func (q *quantity) toldWindow() (time.Duration, bool) {
	w := &q.win
	if w.told <= 0 || w.limit <= 0 || w.many {
		return 0, false
	}
	l := time.Duration(float64(w.limit) / w.told * float64(time.Second))
	return l, l >= longWindow && 10*w.period >= 9*l && w.sliding()
}

// longWindow is the shortest window toldWindow takes.
const longWindow = 10 * time.Second

// logged brings q's rate.Limiter in line with its estimator and logs a
// change of a tenth or more since the last one logged. ln.mu is held.
func (ln *lane) logged(what string, q *quantity, now time.Time, burst int) {
	was := math.Inf(1)
	if q.lim != nil {
		was = float64(q.lim.Limit())
	}
	q.sync(now, burst)
	is := q.pace()
	if was == is {
		return
	}
	ln.l.log.Debug("pace", "model", ln.model, "limit", what, "from", perMinuteText(was), "to", perMinuteText(is),
		"good", perMinuteText(q.est.good), "bad", perMinuteText(q.est.bad), "span", q.est.span)
	switch {
	case is < was:
		ln.l.log.Info("limit lowered after a 429", "model", ln.model, "limit", what, "to", perMinuteText(is))
		q.shown = is
	case q.shown == 0 || is >= q.shown*1.1:
		ln.l.log.Info("limit raised while requests succeed", "model", ln.model, "limit", what, "to", perMinuteText(is))
		q.shown = is
	}
}

func perMinuteText(perSecond float64) string {
	if math.IsInf(perSecond, 1) {
		return "none"
	}
	return strconv.FormatFloat(perSecond*60, 'f', 0, 64) + "/min"
}

// sleep waits for d, or until wake is closed (nil: never), or returns
// ctx.Err() if ctx ends first.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
