package pace

import (
	"sort"
	"time"
)

// sendLog is the lane's record of what it sent of one quantity, for the
// window tracker: each send's time and the lane's running count after it,
// oldest first, as far back as the tracker asks (keep) and maxLogged sends
// at most. Before the oldest kept, the count is floor.
type sendLog struct {
	at    []time.Time
	cum   []float64
	floor float64
}

// maxLogged bounds the sends a log keeps; an older send is forgotten, and
// counts as if it had not yet left a window: the tracker waits longer, never
// less.
const maxLogged = 8192

// add records a send at now that brought the count to count, and forgets
// sends older than keep before now.
func (l *sendLog) add(now time.Time, count float64, keep time.Duration) {
	l.at, l.cum = append(l.at, now), append(l.cum, count)
	drop := sort.Search(len(l.at), func(i int) bool { return !l.at[i].Before(now.Add(-keep)) })
	drop = max(drop, len(l.at)-maxLogged)
	if drop > 0 {
		l.floor = l.cum[drop-1]
		l.at, l.cum = l.at[drop:], l.cum[drop:]
	}
}

// countAt is the count of units sent by t, it included.
func (l *sendLog) countAt(t time.Time) float64 {
	i := sort.Search(len(l.at), func(i int) bool { return l.at[i].After(t) })
	if i == 0 {
		return l.floor
	}
	return l.cum[i-1]
}

// reaching is when the count first reached c; ok is false when it has
// not.
func (l *sendLog) reaching(c float64) (t time.Time, ok bool) {
	if c <= l.floor {
		return time.Time{}, true // before anything kept
	}
	i := sort.Search(len(l.cum), func(i int) bool { return l.cum[i] >= c })
	if i == len(l.cum) {
		return time.Time{}, false
	}
	return l.at[i], true
}

// find finds the send that brought the count to seq: its index; ok is
// false when the log does not hold one.
func (l *sendLog) find(seq float64) (i int, ok bool) {
	i = sort.Search(len(l.cum), func(i int) bool { return l.cum[i] >= seq })
	return i, i < len(l.cum) && l.cum[i] == seq
}

// units is what the send at index i added to the count; 1 for the oldest
// kept.
func (l *sendLog) units(i int) float64 {
	if i > 0 {
		return l.cum[i] - l.cum[i-1]
	}
	return 1
}

// last is when the newest send kept went; zero when none is kept.
func (l *sendLog) last() time.Time {
	if len(l.at) == 0 {
		return time.Time{}
	}
	return l.at[len(l.at)-1]
}

// before is when the newest send at t or before it went; ok is false if
// none is kept.
func (l *sendLog) before(t time.Time) (at time.Time, ok bool) {
	i := sort.Search(len(l.at), func(i int) bool { return l.at[i].After(t) })
	if i == 0 {
		return time.Time{}, false
	}
	return l.at[i-1], true
}

// after is when the oldest send after t went; ok is false if none is.
func (l *sendLog) after(t time.Time) (at time.Time, ok bool) {
	i := sort.Search(len(l.at), func(i int) bool { return l.at[i].After(t) })
	if i == len(l.at) {
		return time.Time{}, false
	}
	return l.at[i], true
}
