package pace

import (
	"testing"
	"time"
)

// TestCounterEdgeVotes: a counter of 100 per 10 s whose resets come in
// whole seconds, rounded up, places its windows' ends exactly, and the
// readings sent within the second after one say so: its slack becomes
// the way to the server. Rounded down, the ends placed are a second
// early, the readings there say so, and the slack stays a second.
func TestCounterEdgeVotes(t *testing.T) {
	ms := time.Millisecond
	for _, down := range []bool{false, true} {
		server := testCounter{limit: 100, length: 10 * time.Second, down: down}
		var w window
		seq := 0.0
		for i := range 300 { // 9.7 a second for 31 s
			sent := time.Duration(i) * 103 * ms
			seq++
			w.sent(at(sent), seq)
			w.read(server.take(sent), at(sent), at(sent+20*ms), seq)
		}
		want := w.guard()
		if down {
			want = time.Second
		}
		if w.ctr.length != 10*time.Second || w.ctr.slack != want {
			t.Errorf("rounded down %v: counter of %v, slack %v (votes %+v); want 10s, %v",
				down, w.ctr.length, w.ctr.slack, w.ctr.votes, want)
		}
	}
}
