package pace

import (
	"cmp"
	"time"
)

// A Reading is what one response's headers say of one of the server's
// windows (of requests or of tokens).
type Reading struct {
	Told   bool          // the response gave Left and Reset
	Limit  int           // the window's size; 0: not said
	Left   int           // what is left of it, the request that got this answer counted
	Reset  time.Duration // until all of it is back (a bucket: until it is full again), from when the request was sent
	Window time.Duration // the window's length, when told; 0 otherwise
	// Guessed: the headers did not say what the window counts (taken for
	// requests); the lane weighs it against its own counts (see weigh).
	Guessed bool
	Several bool // other windows of its unit were told besides, this the one binding now (Kong's -Second and -Minute)
	Coarse  bool // Reset names a whole second of the clock (a Unix time in seconds, a date), cut down or rounded; once the lane has read it, whether it was widened (see widened)
	// Took is, for a Coarse reading, the time from the send to the
	// answer's arrival: the second named lies that much after Reset,
	// counted from the send (see window.named).
	Took time.Duration
	// Whether room comes back at a wall, as sends leave a sliding window, or as a
	// bucket refills, the tracker tells by how resets move: header styles
	// that speak of buckets (OpenAI's) are sent by windows too.
}

// A window is the tracker of one of the server's windows. The newest
// reading tells what the server counted when its request went (used, of
// base = left + used) and when all of that is back (its reset). Every
// kind of window lets a unit the lane sent go by its reset, or once it
// has been in the window for the window's length, whichever is first: a
// sliding log exactly so, a fixed window and a bucket sooner. So, unless a
// window has shown that it refills as it goes (a bucket, whose reset keeps
// in step with what is used), the tracker counts as used what the server
// counted that the lane sent in the window's length before the reading
// (the newest sends: older ones had left), until each of those has been in
// it for the length, what it counted besides (other clients', refusals it
// counts) until the reset, and what the lane sent since; and it takes the room to
// come back no faster than a window's worth over the length from the reading (see
// pace). A bucket is followed as it refills (see level), a counter as it weighs.
type window struct {
	limit  int           // the server's limit; 0: not known
	left   float64       // what the newest reading said was left
	seq    float64       // the lane's count of units sent when that reading's request went, it included
	at     time.Time     // when that request went
	reset  time.Time     // when all the reading counted is back; zero: nothing known
	base   float64       // left + used at the reading: the limit, when known
	lo     float64       // the lane's count below which the reading counted none of its units
	excess float64       // units the reading counted besides the lane's own
	period time.Duration // the longest reset seen: a window lasts at least this
	refill float64       // units a second a bucket gains back; 0: not a bucket
	sized  bool          // limit is the bucket's size its resets show, not the one told (see sizeBucket)
	most   int           // the most a reading said was left
	fine   bool          // a reset was given finer than in whole seconds
	wide   bool          // a reset was read as the end of the whole second it named (see widened)
	many   bool          // a reading told other windows of its unit besides its own (see toldWindow)
	length time.Duration // the window's length, when told; 0 otherwise
	ctr    counter       // a sliding counter's, once its resets tell it is one
	probes int           // requests sent to see whether room came back (see roomOrProbe)
	probed time.Duration // the longest reset seen when the last of them went
	held   heldProbes    // when the last probe went, and those let go by the time the lane was held (see mayProbe)
	told   float64       // the rate the user told, units a second; 0: none
	log    sendLog       // what the lane sent, when
	wall   bool          // a reset stood still until it was reached: a fixed window, renewed every period
	stood  bool          // the reset held has been told alike by requests sent apart
	from   time.Time     // when the first request that told the reset held went
	lag    time.Duration // the longest a reading came after its request went (see sent)
	began  time.Time     // a fixed window's: when the one of the newest reading began, as the tracker holds its walls (see counted)
	order  sentOrder     // the readings by the send time of their requests (see reordered)
	burst  burst         // the sends about the newest reading's, which reached the server in any order (see burst)
	late   lateProbes    // what probes of a window answered later than its resets showed (see late.go)
	named  namedSecond   // whether whole-second resets are counted from the arrival (see named.go)
	trip   time.Duration // a refusal's round trip, as the lane last saw it; 0: none seen
}

// sent records that the lane's count reached count at now. The log keeps
// three spans back from the oldest request a reading may yet come for (a
// counter weighs the window before the one its request went in, and the
// one before that, see counter.own), the longest lag seen before now:
// kept two spans back from now, a minute's
// counter answered 90 s late found the lane's sends of the window before
// gone, and took the server's count of them for others' (11 of 24).
func (w *window) sent(now time.Time, count float64) {
	w.log.add(now, count, 3*max(w.span(), time.Minute)+w.lag)
}

// read takes in r, the reading of the answer to a request sent at sentAt
// when the lane's count was seq. An older reading than the one held says
// nothing new of the count (but see older); one whose reset has passed still tells the size and what
// the lane sent since (an answer slower than the window), unless the size
// is not known: then it is old news.
func (w *window) read(r Reading, sentAt, now time.Time, seq float64) {
	w.many, w.lag = w.many || r.Several, max(w.lag, now.Sub(sentAt))
	w.lateRead(r, sentAt, seq)
	i := w.order.add(r, sentAt, 3*w.span())
	w.held.first = cmp.Or(w.held.first, now)
	bursting := false
	if r.Told && r.Reset > 0 {
		r, sentAt, seq, bursting = w.inBurst(r, sentAt, seq) // see burst
	}
	if !r.Told || r.Reset <= 0 || sentAt.Before(w.at) {
		w.older(r, sentAt)
		w.behind(r, sentAt)
		w.reordered(i)
		return
	}
	if !bursting {
		seq = w.burst.open(&w.log, r, sentAt, seq, w.prior(r, sentAt))
	}
	reset := sentAt.Add(r.Reset + w.guard())
	if !reset.After(now) && max(r.Limit, w.limit) <= 0 {
		return // all back, of a size not known: old news
	}
	if r.Limit > 0 && !w.sized {
		w.limit = r.Limit
	}
	w.most = max(w.most, r.Left)
	w.fine = w.ctr.note(unit(r))
	w.length = max(w.length, r.Window)
	w.judge(r, sentAt)
	w.stand(r, reset, sentAt)
	w.carried(r, sentAt, seq)
	w.beyond(r)
	w.reprobe(r.Reset)
	w.period = max(w.period, r.Reset, r.Window)
	inWindow := w.log.countAt(sentAt.Add(-w.span()))
	used := seq - inWindow // not told: what the lane sent in the window
	if w.limit > 0 {
		used = float64(max(w.limit-r.Left, 0))
	}
	w.lo, w.excess = w.counted(seq, used, inWindow, sentAt)
	w.base = float64(r.Left) + used
	if w.counting() {
		w.ctr.read(&w.log, used, sentAt, r.Reset, seq, w.length > 0, w.guard())
	}
	w.left, w.seq, w.at, w.reset = float64(r.Left), seq, sentAt, reset
	w.named.held()
}

// room reports whether n units fit now, besides kept (units promised to
// requests that waited their turn); when not, wait is how long until they
// might. count is the lane's count of units sent so far.
func (w *window) room(now time.Time, count, n, kept float64) (ok bool, wait time.Duration) {
	if !w.reset.IsZero() && w.limit <= 0 && !now.Before(w.reset) {
		w.reset = time.Time{} // all back, of a size not known
	}
	if w.reset.IsZero() {
		return true, 0 // nothing known
	}
	avail := w.avail(now, count)
	switch {
	case n <= avail-kept:
		if d, held := w.rollHold(now, count); held {
			return false, d // see roll.go
		}
		return true, 0
	case kept == 0 && w.limit > 0 && n > float64(w.limit) && avail >= float64(w.limit):
		return true, 0 // bigger than a whole window, into an untouched one: servers admit it
	case w.counting() && min(n+kept, float64(w.limit)) > avail:
		return false, w.ctr.wait(&w.log, now, min(n+kept, float64(w.limit))-avail)
	case w.refill > 0:
		d := time.Duration((min(n+kept, float64(w.limit))-avail)/w.refill*float64(time.Second)) + time.Millisecond
		return false, max(d, time.Millisecond)
	}
	need := n + kept
	if w.limit > 0 {
		need = min(need, float64(w.limit))
	}
	if need <= avail {
		return false, w.span() // it waits for the one whose room is kept to go
	}
	return false, max(w.until(now, count, need).Sub(now), time.Millisecond)
}

// counting reports whether the window is followed as a sliding counter.
func (w *window) counting() bool { return w.ctr.length > 0 && w.limit > 0 && !w.ctr.blurred() }

// avail is what is left now.
func (w *window) avail(now time.Time, count float64) float64 {
	if w.counting() {
		return w.ctr.avail(&w.log, now, count, w.limit)
	}
	since := count - w.seq
	if w.refill > 0 {
		return w.level(now, count)
	}
	gone := w.gone(now)
	if now.Before(w.reset) {
		held := w.base - w.excess - count + max(w.lo, gone)
		if w.sliding() {
			return held
		}
		return min(held, w.left-since+w.pace()*now.Sub(w.at).Seconds())
	}
	return w.base - count + max(w.seq, gone)
}

// pace is the most room a window gives back a second before its reset, a
// whole window's worth over its length: a sliding counter gives the units
// of the window before back over the length after it (it counts each
// until its own window ends, so some of them longer than the length), and
// no window gives back faster.
func (w *window) pace() float64 { return w.base / w.span().Seconds() }

// sliding reports whether the window keeps no unit past its length, as far as
// its resets show: its length is known (told, or a told rate's) and no reset has
// reached past it (a second more where widened, but a counter's), as a counter's does.
func (w *window) sliding() bool {
	length := cmp.Or(w.length, w.toldLength())
	return length > 0 && (w.period <= length+w.guard() || w.wide && !w.counting() && w.period <= length+time.Second+w.guard())
}

// level is what a bucket holds at now, at the least: what the reading
// left, refilled at its rate, less what was sent since; and, as it holds
// its size at most after any send, its size refilled since that send less
// what was sent from then on.
func (w *window) level(now time.Time, count float64) float64 {
	lvl := min(w.left+w.refill*now.Sub(w.at).Seconds()-(count-w.seq), w.base)
	after := count // the count before the send looked at
	for i := len(w.log.at) - 1; i >= 0 && w.log.cum[i] > w.seq && !w.log.at[i].Before(w.at); i-- {
		if i > 0 {
			after = w.log.cum[i-1]
		} else {
			after = w.log.floor
		}
		lvl = min(lvl, w.base+w.refill*now.Sub(w.log.at[i]).Seconds()-(count-max(after, w.seq)))
	}
	return lvl
}

// gone is the lane's count of units that have left the window by t: sent
// a length before, or, in a fixed window, before the end of a window.
func (w *window) gone(t time.Time) float64 {
	g := w.log.countAt(t.Add(-w.span()))
	if w.wall && w.period > 0 && !t.Before(w.reset) {
		end := w.reset.Add(t.Sub(w.reset) / w.period * w.period)
		g = max(g, w.log.countAt(end.Add(-2*w.guard())))
	}
	return g
}

// leaves is when a unit sent at x has left the window (see gone).
func (w *window) leaves(x time.Time) time.Time {
	t := x.Add(w.span())
	if w.wall && w.period > 0 {
		end := w.reset
		if late := x.Sub(end) + 2*w.guard(); late >= 0 {
			end = end.Add((late/w.period + 1) * w.period)
		}
		if end.Before(t) {
			t = end
		}
	}
	return t
}

// until is when need units will be left, if nothing more is sent: when
// enough of the units counted have been in the window for its length, at
// the reset, or when enough of those sent since have.
func (w *window) until(now time.Time, count, need float64) time.Time {
	if c := need - w.base + w.excess + count; c <= w.seq {
		paced := w.at.Add(time.Duration((need - w.left + count - w.seq) / w.pace() * float64(time.Second)))
		if t, ok := w.log.reaching(c); ok && w.leaves(t).Before(w.reset) {
			if t = w.leaves(t); paced.After(t) {
				t = paced
			}
			if t.Before(w.reset) {
				return t
			}
		}
	}
	c := need - w.base + count
	if c <= w.seq || w.limit <= 0 { // a size not known: nothing is known after the reset
		return w.reset
	}
	if t, ok := w.log.reaching(c); ok {
		if t = w.leaves(t); t.Before(w.reset) {
			return w.reset
		}
		return t
	}
	if later := now.Add(w.span()); later.After(w.reset) {
		return later
	}
	return w.reset
}
