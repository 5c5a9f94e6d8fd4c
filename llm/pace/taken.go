package pace

import "time"

// What a refusal shows of a window against the requests the lane sent
// before it that were not refused. A window of a limit per a length at
// least the longest reset seen takes no more than twice its limit in less
// than that length (a fixed window's across its edge); a bucket of that
// size takes it and what it refilled. So where the lane's count shows more
// taken, the window is a bucket, or a window of a length shorter than its
// resets say (told in whole seconds, rounded up), and refilled what it
// took past its size in that time at least: its units stay no longer than
// the size over that rate. Until answers show more (see late.go), that is
// the stay the tracker holds them to. (throttled's GCRA, 20 a second with a
// burst of 5, tells a limit of 6 and a reset of 1 s; answered 3 s late,
// the lane held to 6 a second for its first 4 s, though 14 had gone in the
// first half second and only the next two were refused.)

// taken notes o, the answer to a request sent at sentAt, for look to
// read what it shows of the stay of the lane's window of requests, if it
// is a refusal of requests whose reading says none is left. ln.mu is held.
func (ln *lane) taken(o Outcome, sentAt time.Time) {
	if r := o.Requests; o.Result == Refused && !o.Tokens && r.Told && r.Left <= 0 {
		ln.req.win.late.check = sentAt
	}
}

// look gives the window of requests what the flight log shows of it: how
// late answers come (see waiting), and, once a refusal noted (see taken)
// is older than two of the longest recent refusal round trips, the
// requests sent in the reset before it that were not refused. Sent at one
// instant, requests reach the server in any order, so those sent with the
// refused one count too. Taken within a tenth of the reset, they are a
// burst that tells nothing of a refill (a limit told per replica, say,
// of several behind one address), and the stay they would show, a few
// milliseconds, would flood the server. ln.mu is held.
func (ln *lane) look(now time.Time) {
	w, f := &ln.req.win, &ln.gate.policy.log
	w.waiting(now, f.oldest())
	at := w.late.check
	if at.IsZero() || !f.settled(at, now) {
		return
	}
	w.late.check = time.Time{}
	if w.limit <= 0 || !w.unknownKind() {
		return
	}
	end := at.Add(bunchGap)
	n, first := f.taken(end.Add(-w.period), end, now)
	if size, span := float64(w.limit), end.Sub(first); n > 2*size && span >= w.period/10 {
		stay := seconds(span.Seconds() * size / (n - size))
		if stay < w.lasts() {
			w.late.stay, w.late.fails = stay, 0
			w.late.least = min(w.late.least, stay)
		}
	}
}

// unknownKind reports whether nothing but its resets tells how the window
// gives back what it took: no length, rate or kind told or found, resets
// in whole seconds of a window of a second or two (the windows late
// probes look into, see lateProbeAt).
func (w *window) unknownKind() bool {
	return !w.fine && w.period <= lateLongest && w.length == 0 && w.toldLength() == 0 &&
		!w.counting() && w.refill == 0 && !w.wall
}

// taken returns how many requests sent after from, up to to, the server
// took, or must have (in flight, settled), and when the first of them went.
func (f *flights) taken(from, to, now time.Time) (n float64, first time.Time) {
	for s := max(f.next-flightLen, 0); s < f.next; s++ {
		g := f.at(s)
		if g == nil || !g.sent.After(from) || g.sent.After(to) {
			continue
		}
		if g.state == tookIt || g.state == flying && f.settled(g.sent, now) {
			if n++; first.IsZero() {
				first = g.sent
			}
		}
	}
	return n, first
}

// settled reports whether a refusal of a request sent at sent would have
// come back by now: it is older than twice the longest recent refusal
// round trip (a refusal comes back at once), and a bunch's gap.
func (f *flights) settled(sent, now time.Time) bool { return now.Sub(sent) > 2*f.quick+bunchGap }
