package pace

import (
	"math"
	"testing"
	"time"
)

// TestCarriedCount: a sliding counter of 120 a minute that tells its
// current window's end as its reset (go-chi/httprate) is taken for a
// counter at the first reading after an end, which counts the window
// before, weighed; a fixed window of the same headers, whose count starts
// from nothing, is not. Each is sent 117 in its first second and 4 more
// from 60 s on.
func TestCarriedCount(t *testing.T) {
	for _, counter := range []bool{true, false} {
		var w window
		var n float64
		send := func(sent time.Duration) {
			n++
			w.sent(at(sent), n)
			start := sent.Truncate(time.Minute)
			used := n - w.log.countAt(at(start-1))
			if counter && start > 0 {
				weigh := 1 - float64(sent-start)/float64(time.Minute)
				used += math.Round((w.log.countAt(at(start-1)) - w.log.countAt(at(start-time.Minute-1))) * weigh)
			}
			left := max(120-int(used), 0)
			w.read(Reading{Told: true, Limit: 120, Left: left, Reset: start + time.Minute - sent}, at(sent), at(sent+50*time.Millisecond), n)
		}
		for i := range 117 {
			send(time.Duration(i) * time.Second / 117)
		}
		for i := range 4 {
			send(time.Minute + time.Duration(i)*10*time.Millisecond)
		}
		if got := w.counting(); got != counter || counter && w.ctr.length != time.Minute {
			t.Errorf("counter %v: counting %v, length %v", counter, got, w.ctr.length)
		}
	}
}
