package mock

import (
	"math"
	"time"
)

// fixedWindow counts what was admitted in window k = [start+kW, start+(k+1)W),
// or with first in a window that starts at the first request counted after
// the last one ended (start then moves to it, k stays 0). Refused requests do
// not count.
type fixedWindow struct {
	limit  int
	window time.Duration
	start  time.Time
	first  bool  // see Config.FirstWindows
	k      int64 // the window counted in used
	used   int   // admitted in window k
	prev   int   // admitted in window k-1 (for the sliding counter)
}

// roll moves the count on to the window of now.
func (f *fixedWindow) roll(now time.Time) {
	if f.first {
		if f.used > 0 && !now.Before(f.start.Add(f.window)) {
			f.used = 0 // over: the next request counted starts the next
		}
		return
	}
	k := int64(now.Sub(f.start) / f.window)
	switch {
	case k == f.k:
	case k == f.k+1:
		f.k, f.prev, f.used = k, f.used, 0
	default:
		f.k, f.prev, f.used = k, 0, 0
	}
}

// end is how long until the window of now ends; roll first.
func (f *fixedWindow) end(now time.Time) time.Duration {
	if f.first && f.used == 0 {
		return f.window // none started: one would end a window from now
	}
	return f.start.Add(time.Duration(f.k+1) * f.window).Sub(now)
}

func (f *fixedWindow) fits(now time.Time, cost int) (bool, time.Duration) {
	f.roll(now)
	if f.used == 0 || f.used+cost <= f.limit {
		return true, 0
	}
	return false, f.end(now)
}

func (f *fixedWindow) take(now time.Time, cost int) {
	f.roll(now)
	if f.first && f.used == 0 {
		f.start = now
	}
	f.used += cost
}

func (f *fixedWindow) refuse(time.Time, int) {}
func (f *fixedWindow) finish(int)            {}

func (f *fixedWindow) state(now time.Time) state {
	f.roll(now)
	return state{limit: f.limit, remaining: max(f.limit-f.used, 0), reset: f.end(now), window: f.window}
}

// slidingLog remembers each admitted request's time and cost for a Window:
// a request fits when what was admitted in the last Window leaves room.
type slidingLog struct {
	limit  int
	window time.Duration
	log    []logEntry // oldest first
	sum    int        // costs in log
}

type logEntry struct {
	at   time.Time
	cost int
}

// expire drops the entries that have left the window of now.
func (s *slidingLog) expire(now time.Time) {
	i := 0
	for i < len(s.log) && !s.log[i].at.Add(s.window).After(now) {
		s.sum -= s.log[i].cost
		i++
	}
	s.log = s.log[i:]
}

func (s *slidingLog) fits(now time.Time, cost int) (bool, time.Duration) {
	s.expire(now)
	if s.sum == 0 || s.sum+cost <= s.limit {
		return true, 0
	}
	// The first moment enough of the oldest entries have left; an
	// oversized request waits for all of them.
	left := s.sum
	for _, e := range s.log {
		left -= e.cost
		if left == 0 || left+cost <= s.limit {
			return false, e.at.Add(s.window).Sub(now)
		}
	}
	return false, s.window // not reached: left reaches 0 at the last entry
}

func (s *slidingLog) take(now time.Time, cost int) {
	s.expire(now)
	s.log = append(s.log, logEntry{now, cost})
	s.sum += cost
}

func (s *slidingLog) refuse(time.Time, int) {}
func (s *slidingLog) finish(int)            {}

// state's reset is the time until the newest entry leaves: all room back.
func (s *slidingLog) state(now time.Time) state {
	s.expire(now)
	st := state{limit: s.limit, remaining: max(s.limit-s.sum, 0), window: s.window}
	if n := len(s.log); n > 0 {
		st.reset = s.log[n-1].at.Add(s.window).Sub(now)
	}
	return st
}

// slidingCounter estimates the sliding window ending now as the previous
// fixed window's count times the share of it still inside, plus the current
// window's count. Refused requests are counted as well as admitted ones.
type slidingCounter struct {
	fixedWindow
}

// estimate is the count of the sliding window ending at now; roll first.
func (s *slidingCounter) estimate(now time.Time) float64 {
	into := float64(now.Sub(s.start)-time.Duration(s.k)*s.window) / float64(s.window)
	return float64(s.prev)*(1-into) + float64(s.used)
}

func (s *slidingCounter) fits(now time.Time, cost int) (bool, time.Duration) {
	s.roll(now)
	est := s.estimate(now)
	if est+float64(cost) <= float64(s.limit)+eps || (s.prev == 0 && s.used == 0) {
		return true, 0
	}
	return false, s.until(now, cost)
}

// until is how long until cost fits, if nothing else came: within this
// window once the previous one has weighed off enough, else in the next one
// as this one weighs off, else (oversized) when both are empty.
func (s *slidingCounter) until(now time.Time, cost int) time.Duration {
	room := float64(s.limit - cost)
	windowStart := s.start.Add(time.Duration(s.k) * s.window)
	if s.prev > 0 && room >= float64(s.used) {
		into := 1 - (room-float64(s.used))/float64(s.prev)
		return windowStart.Add(time.Duration(math.Ceil(into * float64(s.window)))).Sub(now)
	}
	next := windowStart.Add(s.window)
	if room >= 0 && s.used > 0 {
		into := max(1-room/float64(s.used), 0)
		return next.Add(time.Duration(math.Ceil(into * float64(s.window)))).Sub(now)
	}
	return next.Add(s.window).Sub(now) // both windows empty by then
}

func (s *slidingCounter) take(now time.Time, cost int)   { s.roll(now); s.used += cost }
func (s *slidingCounter) refuse(now time.Time, cost int) { s.roll(now); s.used += cost }

// state's reset is the time until the estimate is 0: the end of the next
// window while this one counts anything.
func (s *slidingCounter) state(now time.Time) state {
	s.roll(now)
	st := state{limit: s.limit, remaining: max(s.limit-int(math.Ceil(s.estimate(now))), 0), window: s.window}
	switch {
	case s.used > 0:
		st.reset = s.end(now) + s.window
	case s.prev > 0:
		st.reset = s.end(now)
	}
	return st
}
