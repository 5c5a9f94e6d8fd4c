package mock

import (
	"math/rand/v2"
	"testing"
	"time"
)

// t0 is the start of every meter table: any fixed time will do.
var t0 = time.Unix(1_000_000, 0)

// A step offers a request costing cost at t0+at and expects the verdict ok,
// and for a refusal the retry hint.
type step struct {
	at    time.Duration
	cost  int
	ok    bool
	retry time.Duration
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestMeters(t *testing.T) {
	cfg := func(limit int) meterConfig { return meterConfig{limit: limit, window: time.Second, start: t0} }
	// 20 a second with a burst of 5: 6 at once, then one every 50ms.
	leakyCfg := meterConfig{limit: 20, window: time.Second, start: t0, burst: 5}
	leakySteps := []step{
		{0, 1, true, 0}, {0, 1, true, 0}, {0, 1, true, 0}, {0, 1, true, 0}, {0, 1, true, 0}, {0, 1, true, 0},
		{0, 1, false, ms(50)},
		{ms(20), 1, false, ms(30)},
		{ms(50), 1, true, 0},
		{ms(50), 1, false, ms(50)},
		{ms(1000), 6, true, 0}, // drained: the whole burst again
		{ms(1000), 1, false, ms(50)},
		{ms(5000), 10, true, 0},       // more than the bucket holds: admitted when empty
		{ms(5000), 1, false, ms(250)}, // 10-6+1 units to drain at 20 a second
		{ms(5100), 7, false, ms(400)}, // oversized again: waits until empty
	}
	tests := []struct {
		name  string
		m     meter
		steps []step
	}{
		{"fixed window", newMeter(LimiterWindow, cfg(3)), []step{
			{0, 1, true, 0}, {ms(100), 1, true, 0}, {ms(200), 1, true, 0},
			{ms(200), 1, false, ms(800)},
			{ms(999), 1, false, ms(1)},
			{ms(1000), 3, true, 0},
			{ms(1000), 1, false, ms(1000)},
			{ms(2500), 5, true, 0}, // more than the limit: admitted into an empty window
			{ms(2500), 1, false, ms(500)},
		}},
		{"fixed window from the first request", newMeter(LimiterWindow, meterConfig{limit: 3, window: time.Second, start: t0, first: true}), []step{
			{ms(300), 1, true, 0}, {ms(400), 1, true, 0}, {ms(500), 1, true, 0}, // the window is [0.3 s, 1.3 s)
			{ms(1000), 1, false, ms(300)}, // aligned, a new window would have begun at 1 s
			{ms(1299), 1, false, ms(1)},
			{ms(1300), 3, true, 0},      // the next starts at the first request after: 1.3 s
			{ms(2299), 1, false, ms(1)}, // it ends at 2.3 s
			{ms(4000), 1, true, 0},      // none from 2.3 s to 4 s: the next is [4 s, 5 s)
			{ms(4000), 2, true, 0},
			{ms(4999), 1, false, ms(1)},
		}},
		{"penalty box from the first request", newMeter(LimiterPenalty, meterConfig{limit: 2, window: time.Second, start: t0, first: true, penalty: 2 * time.Second}), []step{
			{ms(600), 1, true, 0}, {ms(700), 1, true, 0},
			{ms(1500), 1, false, 2 * time.Second}, // in the window [0.6 s, 1.6 s): banned until 3.5 s
			{ms(3500), 2, true, 0},                // a window from 3.5 s
			{ms(4400), 1, false, 2 * time.Second},
		}},
		{"token bucket", newMeter(LimiterBucket, cfg(4)), []step{ // 4 a second: 250ms a unit
			{0, 1, true, 0}, {0, 1, true, 0}, {0, 1, true, 0}, {0, 1, true, 0}, // starts full
			{0, 1, false, ms(250)},
			{ms(100), 1, false, ms(150)},
			{ms(250), 1, true, 0},
			{ms(250), 1, false, ms(250)},
			{ms(750), 2, true, 0},     // refilled continuously
			{ms(10_000), 10, true, 0}, // more than the bucket: from a full one, emptying it
			{ms(10_000), 1, false, ms(250)},
		}},
		{"leaky bucket", newMeter(LimiterLeaky, leakyCfg), leakySteps},
		{"gcra", newMeter(LimiterGCRA, leakyCfg), leakySteps}, // the same admissions as the leaky bucket
		{"sliding log", newMeter(LimiterSlidingLog, cfg(3)), []step{
			{0, 1, true, 0}, {ms(300), 1, true, 0}, {ms(600), 1, true, 0},
			{ms(700), 1, false, ms(300)}, // the first leaves at 1s
			{ms(1000), 1, true, 0},
			{ms(1100), 1, false, ms(200)}, // the second leaves at 1.3s
			{ms(1100), 3, false, ms(900)}, // three need all of them gone, the last at 2s
			{ms(5000), 5, true, 0},        // oversized into an empty log
			{ms(5500), 1, false, ms(500)},
		}},
		{"sliding counter", newMeter(LimiterSlidingCounter, cfg(10)), []step{
			{0, 10, true, 0},
			{ms(500), 10, false, ms(1500)}, // refused, and counted: window 0 holds 20
			// 1.5s: 20 × 0.5 = 10 would still fill it (10 had it not counted the
			// refusals). Counting this one too, one fits when 20 × (1-f) + 1 + 1 <= 10,
			// f = 0.6.
			{ms(1500), 1, false, ms(100)},
			{ms(1600), 1, true, 0},
			{ms(1600), 1, false, ms(100)},
		}},
		{"penalty box", newMeter(LimiterPenalty, meterConfig{limit: 2, window: time.Second, start: t0, penalty: 5 * time.Second}), []step{
			{0, 1, true, 0}, {0, 1, true, 0},
			{ms(100), 1, false, 5 * time.Second}, // the ban it starts outlasts the window
			{ms(1000), 1, false, ms(4100)},       // a new window, but banned
			{ms(5100), 1, true, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, s := range tt.steps {
				ok, retry := admit(tt.m, t0.Add(s.at), s.cost)
				if ok != s.ok || (!ok && retry != s.retry) {
					t.Errorf("step %d: admit(t0+%v, %d) = %v, %v; want %v, %v", i+1, s.at, s.cost, ok, retry, s.ok, s.retry)
				}
			}
		})
	}
}

func TestConcurrencyCap(t *testing.T) {
	c := &concurrencyCap{limit: 2, guess: ms(50)}
	for i, want := range []bool{true, true, false} {
		if ok, retry := admit(c, t0, 1); ok != want || (!ok && retry != ms(50)) {
			t.Errorf("request %d: admit = %v, %v; want %v (retry 50ms)", i+1, ok, retry, want)
		}
	}
	c.finish(1)
	if ok, _ := admit(c, t0, 1); !ok {
		t.Errorf("after one finished: admit = false, want true")
	}
	if st := c.state(t0); st.limit != 2 || st.remaining != 0 {
		t.Errorf("state = %+v, want limit 2, remaining 0", st)
	}
}

// TestMeterStates checks what each meter tells the headers: what is left
// and how long until all of it is back.
func TestMeterStates(t *testing.T) {
	cfg := func(limit int) meterConfig {
		return meterConfig{limit: limit, window: time.Second, start: t0, burst: 5, penalty: 5 * time.Second}
	}
	tests := []struct {
		name      string
		m         meter
		admits    []step // offered first, outcomes unchecked
		at        time.Duration
		remaining int
		reset     time.Duration
	}{
		{"fixed window", newMeter(LimiterWindow, cfg(3)), []step{{at: ms(200), cost: 1}}, ms(200), 2, ms(800)},
		{"token bucket: until full", newMeter(LimiterBucket, cfg(4)), []step{{cost: 2}}, 0, 2, ms(500)},
		{"leaky bucket: until empty", newMeter(LimiterLeaky, cfg(20)), []step{{cost: 3}}, 0, 3, ms(150)},
		{"gcra: until empty", newMeter(LimiterGCRA, cfg(20)), []step{{cost: 3}}, 0, 3, ms(150)},
		{"sliding log: until the newest leaves", newMeter(LimiterSlidingLog, cfg(3)),
			[]step{{cost: 1}, {at: ms(300), cost: 1}}, ms(500), 1, ms(800)},
		{"sliding counter: previous window weighing", newMeter(LimiterSlidingCounter, cfg(10)),
			[]step{{cost: 10}}, ms(1500), 5, ms(500)},
		{"sliding counter: current window counts into the next", newMeter(LimiterSlidingCounter, cfg(10)),
			[]step{{cost: 4}}, ms(200), 6, ms(1800)},
		{"penalty box: nothing left while banned", newMeter(LimiterPenalty, cfg(1)),
			[]step{{cost: 1}, {cost: 1}}, ms(500), 0, ms(4500)},
	}
	for _, tt := range tests {
		for _, s := range tt.admits {
			admit(tt.m, t0.Add(s.at), s.cost)
		}
		st := tt.m.state(t0.Add(tt.at))
		if st.remaining != tt.remaining || st.reset != tt.reset || st.window != time.Second {
			t.Errorf("%s: state(t0+%v) = %+v, want remaining %d, reset %v, window 1s", tt.name, tt.at, st, tt.remaining, tt.reset)
		}
	}
}

// TestMeterHintsHold: for every algorithm, a request refused with a hint
// of d fits when it comes back d later, if nothing else came in between
// (a client that obeys the server's Retry-After is let in), and not a
// millisecond sooner (the hint is not padded).
func TestMeterHintsHold(t *testing.T) {
	names := []string{LimiterWindow, LimiterBucket, LimiterLeaky, LimiterSlidingLog, LimiterSlidingCounter, LimiterGCRA, LimiterPenalty}
	for _, name := range names {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 7))
			c := meterConfig{limit: 5 + r.IntN(50), window: time.Duration(1+r.IntN(60)) * time.Second, start: t0,
				burst: r.IntN(5), penalty: time.Duration(r.IntN(10)) * time.Second}
			type offer struct {
				at   time.Duration
				cost int
			}
			var history []offer
			var at time.Duration
			checked := 0
			for range 300 {
				at += time.Duration(r.Int64N(int64(c.window) / 10))
				o := offer{at, 1 + r.IntN(c.limit/2+1)}
				history = append(history, o)
				m := newMeter(name, c)
				var ok bool
				var retry time.Duration
				for _, h := range history {
					ok, retry = admit(m, t0.Add(h.at), h.cost)
				}
				if ok {
					continue
				}
				checked++
				// The hint is also tight: a millisecond earlier is too early.
				if early := o.at + retry - time.Millisecond; retry > time.Millisecond {
					if fits, _ := m.fits(t0.Add(early), o.cost); fits {
						t.Fatalf("%s, seed %d, %+v: refused at %v with hint %v, but fits at %v already",
							name, seed, c, o.at, retry, early)
					}
				}
				if fits, again := m.fits(t0.Add(o.at+retry), o.cost); !fits {
					t.Fatalf("%s, seed %d, %+v: refused at %v with hint %v, and at %v still refused (hint %v)",
						name, seed, c, o.at, retry, o.at+retry, again)
				}
			}
			if checked == 0 {
				t.Errorf("%s, seed %d: nothing was refused: the test tests nothing", name, seed)
			}
		}
	}
}
