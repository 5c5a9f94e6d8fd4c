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
	Reset  time.Duration // until it resets (a bucket: until it is full again), from when the request was sent
	Window time.Duration // the window's length, when told; 0 otherwise
	// Whether the reset ends a wall or fills a bucket, the tracker tells
	// by how resets move: header styles that speak of buckets (OpenAI's)
	// are sent by fixed windows too.
}

// A window is the tracker of one of the server's windows: what the newest
// reading said is left, less what the lane has sent since that reading's
// request went (the server had not counted those yet). It is a wall that
// opens at its reset unless it has shown that it refills as it goes (a
// bucket: a reading with more left than the last one less what was sent
// between them), when it gains back (Limit-Left)/Reset a second. Time and
// the lane's running count of units sent are passed in; the lane owns it.
type window struct {
	limit  int           // the server's limit; 0: not known
	left   float64       // what the newest reading said was left
	seq    float64       // the lane's count of units sent when that reading's request went, it included
	at     time.Time     // when that request went
	reset  time.Time     // when the window resets; zero: nothing known
	period time.Duration // the longest reset seen: a window lasts at least this
	refill float64       // units a second a bucket gains back; 0: a wall
	most   int           // the most a reading said was left
	fine   bool          // a reset was given finer than in whole seconds
	length time.Duration // the window's length, when told; 0 otherwise
	fresh  bool          // renew began the window held: no reading of it yet
	rolls  bool          // a reading falsified a wall: room comes back as it goes (a sliding window)
}

// guard is allowed for the way to the server: a reset counted from when a
// request was sent is a little early against the server's clock.
func (w *window) guard() time.Duration { return min(50*time.Millisecond, w.period/50) }

// read takes in r, the reading of the answer to a request sent at sentAt
// when the lane's count was seq. An older reading than the one held says
// nothing new; one whose reset has passed is old news.
func (w *window) read(r Reading, sentAt, now time.Time, seq float64) {
	if !r.Told || r.Reset <= 0 || sentAt.Before(w.at) {
		return
	}
	reset := sentAt.Add(r.Reset + w.guard())
	if !reset.After(now) {
		return
	}
	if r.Limit > 0 {
		w.limit = r.Limit
	}
	w.most = max(w.most, r.Left)
	w.fine = w.fine || r.Reset%time.Second != 0
	w.length = max(w.length, r.Window)
	w.judge(r, sentAt)
	w.period = max(w.period, r.Reset, r.Window)
	w.falsify(r, sentAt, seq)
	if w.refill == 0 && !w.fine && !w.reset.IsZero() && sentAt.Before(w.reset) &&
		reset.After(w.reset) && reset.Sub(w.reset) <= w.period+w.guard() {
		// The same wall, its reset given in whole seconds (Kong, IETF,
		// GitHub): each reading bounds it from above, the earliest the
		// nearest; a new wall's reset is a whole period on.
		reset = w.reset
	}
	w.left, w.seq, w.at, w.reset = float64(r.Left), seq, sentAt, reset
}

// falsify tells a sliding window (a log or counter, whose reset is when
// all the room is back) from a wall: just after a wall's reset, a reading
// shows about the whole limit left, less what was sent since; one that
// shows far less says room comes back as it went, about limit/length a
// second, and not at once at a reset. A request sent within the guard of
// the reset may have been counted in the old window: it proves nothing.
func (w *window) falsify(r Reading, sentAt time.Time, seq float64) {
	if w.fresh && w.limit > 0 && !sentAt.Before(w.at.Add(w.guard())) &&
		float64(r.Left) < w.left-(seq-w.seq)-max(2, float64(w.limit)/10) {
		w.rolls = true
	}
	w.fresh = false
	if w.rolls {
		w.refill = max(w.refill, float64(w.limit)/cmp.Or(w.length, w.period).Seconds())
	}
}

// judge tells a bucket from a wall by how the reset moved since the
// reading held: a wall's reset comes nearer as time passes, a bucket's is
// the time to refill what is used, so it keeps in step with Limit-Left.
// Whichever the new reading is nearer to, by more than timing noise (or
// than a whole second, for a reset given in seconds), wins.
func (w *window) judge(r Reading, sentAt time.Time) {
	used, usedThen := float64(w.limit-r.Left), float64(w.limit)-w.left
	if w.reset.IsZero() || w.limit <= 0 || used <= 0 || usedThen <= 0 {
		return
	}
	then := w.reset.Sub(w.at) - w.guard()
	asBucket := time.Duration(float64(then) * used / usedThen)
	asWall := then - sentAt.Sub(w.at)
	noise := 20 * time.Millisecond
	if !w.fine && w.length > 0 {
		noise = time.Second // resets in whole seconds of a told window tell nothing finer
	}
	if d := asBucket - asWall; d < noise && d > -noise {
		return // too near to tell
	}
	if (r.Reset - asBucket).Abs() < (r.Reset - asWall).Abs() {
		w.refill = used / r.Reset.Seconds()
	} else {
		w.refill = 0
	}
}

// room reports whether n units fit now, besides kept (units promised to
// requests that waited their turn); when not, wait is how long until they
// might. count is the lane's count of units sent so far.
func (w *window) room(now time.Time, count, n, kept float64) (ok bool, wait time.Duration) {
	w.renew(now, count)
	if w.reset.IsZero() {
		return true, 0 // nothing known
	}
	avail := w.avail(now, count)
	switch {
	case n <= avail-kept:
		return true, 0
	case kept == 0 && w.limit > 0 && n > float64(w.limit) && avail >= float64(w.limit):
		return true, 0 // bigger than a whole window, into an untouched one: servers admit it
	case w.refill > 0:
		need := min(n+kept, float64(w.limit)) - avail
		return false, min(time.Duration(need/w.refill*float64(time.Second))+time.Millisecond, w.reset.Sub(now))
	}
	return false, w.reset.Sub(now)
}

// avail is what is left now.
func (w *window) avail(now time.Time, count float64) float64 {
	a := w.left - (count - w.seq)
	if w.refill > 0 {
		a += w.refill * now.Sub(w.at).Seconds()
		if w.limit > 0 {
			a = min(a, float64(w.limit)-(count-w.seq))
		}
	}
	return a
}

// renew starts the window that follows a reset: full, when the limit is
// known, with the next reset a period on; nothing known otherwise. Without
// it, every request held for the reset would go at once.
func (w *window) renew(now time.Time, count float64) {
	if w.reset.IsZero() || now.Before(w.reset) {
		return
	}
	if w.limit <= 0 || w.period <= 0 {
		w.reset = time.Time{}
		return
	}
	began := w.reset.Add(now.Sub(w.reset) / w.period * w.period)
	w.left, w.seq, w.at, w.reset = float64(w.limit), count, began, began.Add(w.period)
	w.fresh = true
}

// spentClaim reports whether r says the window is spent although the
// lane's own count contradicts it: it sent less than a quarter of what the
// reading says was used (of the limit, or of the most ever said to be
// left, most) in the window's time, sentOwn. A claim the client
// cannot check (no size known) is believed.
func spentClaim(r Reading, most int, sentOwn float64) bool {
	size := max(r.Limit, most)
	if !r.Told || size <= 0 || r.Left > size/100 {
		return false
	}
	return sentOwn < float64(size-r.Left)/4
}
