package pace

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// kongServer counts requests as Kong does with two fixed windows, of a
// second and of a minute, and answers with the reading of the one that
// binds (the least left a second until it resets), as parseLimits keeps.
type kongServer struct {
	mu               sync.Mutex
	start            time.Time
	perSec, perMin   int
	secN, minN       map[int64]int
	admitted, refuse int
}

// served is how many it admitted.
func (k *kongServer) served() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.admitted
}

// serve counts a request sent now and returns its outcome.
func (k *kongServer) serve() Outcome {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Since(k.start)
	s, m := int64(now/time.Second), int64(now/time.Minute)
	ok := k.secN[s] < k.perSec && k.minN[m] < k.perMin
	if ok {
		k.secN[s]++
		k.minN[m]++
		k.admitted++
	} else {
		k.refuse++
	}
	sr := Reading{Told: true, Limit: k.perSec, Left: k.perSec - k.secN[s], Reset: time.Duration(s+1)*time.Second - now, Window: time.Second, Several: true}
	mr := Reading{Told: true, Limit: k.perMin, Left: k.perMin - k.minN[m], Reset: time.Duration(m+1)*time.Minute - now, Window: time.Minute, Several: true}
	o := Outcome{Result: Admitted, Requests: mr}
	if float64(sr.Left)/sr.Reset.Seconds() < float64(mr.Left)/mr.Reset.Seconds() {
		o.Requests = sr
	}
	if !ok {
		o.Result, o.Hint = Refused, o.Requests.Reset
	}
	return o
}

// TestToldMinuteBesideASecond: told the minute of a server that counts a
// second besides (Kong's second and minute, each read when it binds, the
// readings marked as one of several), the pace does not take the minute
// for the told window (see toldWindow), so nothing is refused. As the
// minute's reading and the second's took turns, each turn back to the
// minute had refilled a minute's worth: 8 workers had 123-130 refused
// besides 200 admitted; filled once, 0-7, all in the first second, before
// the second's reading bound.
func TestToldMinuteBesideASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{RPM: 300, Concurrency: 8})
		k := &kongServer{start: time.Now(), perSec: 10, perMin: 300, secN: map[int64]int{}, minN: map[int64]int{}}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for k.served() < 200 {
					p, err := l.Acquire(t.Context(), "m", 0)
					if err != nil {
						t.Error(err)
						return
					}
					o := k.serve()
					time.Sleep(50 * time.Millisecond) // the answer's way back
					if h := p.Done(o); o.Result == Refused {
						time.Sleep(h)
					}
				}
			})
		}
		wg.Wait()
		if k.refuse > 0 {
			t.Errorf("%d of %d requests refused, want none", k.refuse, k.refuse+k.admitted)
		}
	})
}

// TestInMinute: the told minute (second.go) waits for the sends that
// leave it, counts the room kept, and is left to the tracker once the
// headers show a window it follows.
func TestInMinute(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	order := []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond}
	sends := map[time.Duration]float64{0: 300, 200 * time.Millisecond: 300, 400 * time.Millisecond: 300}
	now := t0.Add(30 * time.Second)
	for _, tc := range []struct {
		name           string
		n, kept, limit float64
		ok             bool
		wait           time.Duration
		kind           string // what the headers showed: "bucket", "wall", "told" (the told window); "": nothing
	}{
		{name: "fits what the minute has left", n: 100, limit: 1000, ok: true},
		{name: "waits for the first send to leave the minute", n: 350, limit: 1000, wait: 30 * time.Second},
		{name: "besides the room kept: for the second", n: 50, kept: 400, limit: 1000, wait: 30200 * time.Millisecond},
		{name: "bigger than the limit: when the minute is empty", n: 1500, limit: 1000, wait: 30400 * time.Millisecond},
		{name: "untold", n: 350, ok: true},
		{name: "a bucket's server: the tracker follows it", n: 350, limit: 1000, ok: true, kind: "bucket"},
		{name: "a fixed window's: the tracker follows it", n: 350, limit: 1000, ok: true, kind: "wall"},
		{name: "the told window shown: the tracker follows it", n: 350, limit: 1000, ok: true, kind: "told"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := secondAt(t0, sends, order)
			q.minute = tc.limit
			switch tc.kind {
			case "bucket":
				q.win.refill = 1000.0 / 60
			case "wall":
				q.win.wall = true
			case "told":
				q.win.told, q.win.limit, q.win.period, q.win.length = 1000.0/60, 1000, time.Minute, time.Minute
			}
			ok, wait := q.inMinute(now, tc.n, 0, tc.kept)
			if ok != tc.ok || (!ok && wait != tc.wait) {
				t.Errorf("inMinute(%v, kept %v) = %v, %v; want %v, %v", tc.n, tc.kept, ok, wait, tc.ok, tc.wait)
			}
		})
	}
}
