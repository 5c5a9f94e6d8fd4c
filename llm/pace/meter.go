package pace

import "time"

// meterSlot is a meter's resolution; it keeps len(meter.slots) of them.
const meterSlot = 200 * time.Millisecond

// A meter counts units by when they happened, in fifths of a second over
// the last 100 s or so, so that the estimator can look over a horizon
// longer than one pace's epoch. Pure: time is passed in.
type meter struct {
	slots [512]float64
	stamp [512]int64 // the slot number (time / meterSlot) each slot holds
	first time.Time  // when the first unit was counted; zero: none yet
}

func slotOf(t time.Time) int64 { return t.UnixNano() / int64(meterSlot) }

// add counts n units at now.
func (m *meter) add(now time.Time, n float64) {
	if m.first.IsZero() {
		m.first = now
	}
	s := slotOf(now)
	i := s % int64(len(m.slots))
	if m.stamp[i] != s {
		m.stamp[i], m.slots[i] = s, 0
	}
	m.slots[i] += n
}

// sum returns the units counted from from to to, in whole slots (the one
// to falls in included), over the meter's memory at most.
func (m *meter) sum(from, to time.Time) float64 {
	hi := slotOf(to)
	lo := max(slotOf(from), hi-int64(len(m.slots))+1)
	total := 0.0
	for s := lo; s <= hi; s++ {
		if i := s % int64(len(m.slots)); m.stamp[i] == s {
			total += m.slots[i]
		}
	}
	return total
}

// memory is how far back a meter remembers.
const memory = time.Duration(len(meter{}.slots)-1) * meterSlot

// longRun is what an estimator's lane got over the last minute or so: the
// units admitted and refused, and the seconds it held after refusals, by
// when they happened.
type longRun struct{ got, nays, held meter }

// rate returns what the server admitted a second while it was sent to,
// holds left out, over a horizon of 16 spans (8 s to the meter's memory);
// ok only when the horizon is long enough and refusals came in both its
// halves: the server was saturated all along, so what it let through is
// its rate, with no burst allowance left to flatter it. Not where that is
// under good, the pace last held for a span, and the lane climbed through
// the horizon (see climbing): what the server took is what was sent.
func (l *longRun) rate(now time.Time, span time.Duration, good float64) (perSecond float64, ok bool) {
	h := min(max(16*span, 8*time.Second), memory)
	from := now.Add(-h)
	if l.got.first.IsZero() || from.Before(l.got.first) {
		return 0, false
	}
	mid := now.Add(-h / 2)
	if l.nays.sum(from, mid) == 0 || l.nays.sum(mid.Add(meterSlot), now) == 0 {
		return 0, false
	}
	busy := h - time.Duration(l.held.sum(from, now)*float64(time.Second))
	r := l.got.sum(from, now) / max(busy, minSpan).Seconds()
	if r < good && l.climbing(from, mid, now, 4) {
		return 0, false // refusals at both ends, a climb from under the rate between
	}
	return r, true
}

// climbing reports whether the second half of the time from from to to
// (mid between) took over a quarter more than the first, give or take
// slack units: the lane climbed through it, and the server was not full
// all along, however refusals came in both halves. (Two refusals 12 s apart, a climb from 336/min to
// 535/min between, made nginx's limit_req of 10 a second with no burst
// look full at the 360/min the climb averaged, under the 466/min it had
// held for a span, and the pace was cut to 342/min.)
func (l *longRun) climbing(from, mid, to time.Time, slack float64) bool {
	return 4*l.got.sum(mid.Add(meterSlot), to) > 5*l.got.sum(from, mid)+slack
}

// sinceFirst is rate over the whole run, holds and all, while it is
// shorter than rate's horizon but two spans long at least: ok only when
// refusals came in both its halves. Over the whole run a window let
// through its first window's worth and, sent to all along, its rate the
// rest of the time: its rate, whatever the holds (the room a window or a
// bucket gains while the lane holds is there for it after); a bucket, its
// rate and its burst, more. (A sliding counter of 200 a 10 s, locked out
// for 12 s after its first 200, was cut to a quarter of the 12,000/min
// sent, and then a tenth at a time, refused eight times in 6 s, where it
// had let through 1,177/min since the start.)
func (l *longRun) sinceFirst(now time.Time, span time.Duration) (perSecond float64, ok bool) {
	h := now.Sub(l.got.first)
	if l.got.first.IsZero() || h < 2*span || h > memory {
		return 0, false
	}
	mid := now.Add(-h / 2)
	if l.nays.sum(l.got.first, mid) == 0 || l.nays.sum(mid.Add(meterSlot), now) == 0 {
		return 0, false
	}
	return l.got.sum(l.got.first, now) / max(h, minSpan).Seconds(), true
}

// longest returns the longest horizon, up to most, that no stretch of
// the meter's memory up to to holds more than limit units in (in whole
// slots); 0 if one slot does.
func (m *meter) longest(limit float64, most time.Duration, to time.Time) time.Duration {
	if m.first.IsZero() || to.Before(m.first) {
		return 0
	}
	hi := slotOf(to)
	lo := max(slotOf(m.first), hi-int64(len(m.slots))+1)
	sums := make([]float64, hi-lo+2) // sums[i]: the units in the slots before lo+i
	for s := lo; s <= hi; s++ {
		v := 0.0
		if i := s % int64(len(m.slots)); m.stamp[i] == s {
			v = m.slots[i]
		}
		sums[s-lo+1] = sums[s-lo] + v
	}
	h := 1
	for ; time.Duration(h)*meterSlot <= most && h < len(sums); h++ {
		for i := h; i < len(sums); i++ {
			if sums[i]-sums[i-h] > limit {
				return time.Duration(h-1) * meterSlot
			}
		}
	}
	return time.Duration(h-1) * meterSlot
}

// room returns when a window as long as window, holding what the meter
// counted in it back from now, holds no more than limit: the end of the
// slot past which what it counted up to now is that little. ok is false
// if it never does.
func (m *meter) room(limit float64, window time.Duration, now time.Time) (time.Time, bool) {
	hi := slotOf(now)
	total := m.sum(now.Add(-window), now)
	for s := slotOf(now.Add(-window)); s <= hi && total > limit; s++ {
		if i := s % int64(len(m.slots)); m.stamp[i] == s {
			total -= m.slots[i]
		}
		if total <= limit {
			return time.Unix(0, (s+1)*int64(meterSlot)).Add(window), true
		}
	}
	return now, total <= limit
}
