package pace

import (
	"math"
	"time"
)

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

// A tally is what the lane's answers of about the last second were,
// refused or not, each weighing half as much every half second.
type tally struct {
	nays, all float64
	at        time.Time
}

// add counts an answer at now.
func (t *tally) add(now time.Time, refused bool) {
	if !t.at.IsZero() {
		f := math.Exp2(-now.Sub(t.at).Seconds() / 0.5)
		t.nays, t.all = t.nays*f, t.all*f
	}
	t.at = now
	t.all++
	if refused {
		t.nays++
	}
}

// dense reports whether most of the answers of about the last second
// were refusals, denseNays at least: a server refusing that much is
// limiting the lane, whatever its claims say of its windows (see believed).
func (t *tally) dense() bool { return t.nays >= denseNays && 2*t.nays >= t.all }

// denseNays is the least a tally's refusals must weigh to be dense.
const denseNays = 3
