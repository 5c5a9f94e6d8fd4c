package pace

import "time"

// coarseLong is the shortest window whose resets told in whole seconds of
// the clock are read as the end of the second they name (see widened).
const coarseLong = 10 * time.Second

// widened is r with its reset at the end of the second it names, where it
// names a whole second of the clock (see Reading.Coarse) and the window is
// at least coarseLong: its end lies anywhere in that second, and a server
// that cuts it down (go-chi/httprate, whose windows start at the limiter's
// own first instant, ulule/limiter) still counts the window a fraction of
// a second past the start of that second, where the lane, reading it as
// the end, sent into a window still full and met a minute's Retry-After
// (httprate's 120 a minute started 0.4 s into a second: told 1.06-1.33x,
// untold 1.65x). Read so, a server that rounds up costs the lane at most a
// second's wait at each end, a tenth of a window of 10 s, a sixtieth of a
// minute's; on shorter windows whole seconds place no end (see counter's
// tick) and a second's wait would cost more than it saves. Coarse then
// says whether r was widened.
func (w *window) widened(r Reading) Reading {
	whole := r.Coarse && r.Told
	r.Coarse = whole && max(w.period, r.Reset) >= coarseLong
	switch {
	case r.Coarse:
		r.Reset += time.Second
	case whole && w.named.on:
		r.Reset += r.Took // see namedSecond
	}
	return r
}

// widen widens the readings of o, the outcome of p, by their windows (see
// widened), once each window has weighed what they show of how it names
// its seconds (see namedSecond).
func (ln *lane) widen(p *Permit, o *Outcome) {
	for _, q := range []struct {
		w *window
		r *Reading
	}{{&ln.req.win, &o.Requests}, {&ln.tok.win, &o.TokenWindow}} {
		q.w.named.weigh(*q.r, p.sent, q.w.reset, o.Result == Refused)
		*q.r = q.w.widened(*q.r)
		q.w.wide = q.w.wide || q.r.Coarse
	}
}

// slack is how early the end a reading such as r, widened, tells may be:
// a second where it was widened (the end lies in the second before), else
// none.
func slack(r Reading) time.Duration {
	if r.Coarse {
		return time.Second
	}
	return 0
}

// unit is what r's reset, widened, tells the counter of the unit resets
// come in (see counter.note): a whole second where it was widened,
// whatever the fraction counting it from the local now gave it. (On
// shorter windows, whole seconds so taken made the lane hold a sliding
// counter of 20 a second, told GitHub's way, a tick at each end: 1.6x.)
func unit(r Reading) time.Duration {
	if r.Coarse {
		return time.Second
	}
	return r.Reset
}
