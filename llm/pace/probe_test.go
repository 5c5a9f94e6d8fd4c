package pace

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestProbe: a window whose resets reach twice a counter's length, not
// told its kind, lets one request go into the second half of the reset
// held, as far as a counter of half would take to give it back; not
// before, not a second while one is out, and none once one was refused.
func TestProbe(t *testing.T) {
	ms := time.Millisecond
	fresh := func() *window {
		var w window
		for i := range 20 {
			w.sent(at(time.Duration(i)*10*ms), float64(i+1))
			w.read(counterReading(time.Duration(i)*10*ms, i+1), at(time.Duration(i)*10*ms), at(time.Duration(i)*10*ms+5*ms), float64(i+1))
		}
		return &w // 20 sent by 0.19 s; reset at 2 s
	}
	w := fresh() // the reset held ends at 2.04 s (the guard added), so the probe of one unit goes at 1.04 + 0.15 s
	if ok, wait, probe := w.roomOrProbe(at(500*ms), 20, 1, 0); ok || probe || (wait-690*ms).Abs() > 10*ms {
		t.Errorf("at 0.5 s: %v, %v, probe %v; want a wait until the probe at ~1.19 s", ok, wait, probe)
	}
	if ok, _, probe := w.roomOrProbe(at(1200*ms), 20, 1, 0); !ok || !probe {
		t.Errorf("at 1.2 s: %v, probe %v; want a probe", ok, probe)
	}
	if _, _, probe := w.roomOrProbe(at(1200*ms), 20, 10, 0); probe {
		t.Errorf("10 of 20 at 1.2 s went to probe; a counter of 1 s gives them back from 1.6 s")
	}
	if _, _, probe := w.roomOrProbe(at(1200*ms), 20, 1, 5); probe {
		t.Errorf("a probe went past room kept for another")
	}
	w.probes++ // it went
	if _, _, probe := w.roomOrProbe(at(1300*ms), 20, 1, 0); probe {
		t.Errorf("a second probe while the first is out")
	}
	w.read(Reading{Told: true, Limit: 20, Left: 0, Reset: 840 * ms}, at(1200*ms+1), at(1300*ms), 21) // refused: the same reset
	if _, _, probe := w.roomOrProbe(at(1500*ms), 21, 1, 0); probe {
		t.Errorf("a probe after one was refused")
	}
	many := fresh()
	many.probes = maxProbes
	if _, _, probe := many.roomOrProbe(at(1200*ms), 20, 1, 0); probe {
		t.Errorf("a probe after %d that told no counter", maxProbes)
	}
	told := fresh()
	told.length = 2 * time.Second
	if _, _, probe := told.roomOrProbe(at(1200*ms), 20, 1, 0); probe {
		t.Errorf("a probe in a window of told length")
	}
	rate := fresh()
	rate.told = 10 // a told rate of 10 a second gives 20 a length of 2 s
	if _, _, probe := rate.roomOrProbe(at(1200*ms), 20, 1, 0); probe {
		t.Errorf("a probe in a window whose length a told rate gives")
	}
}

// TestProbeRefused: a probe the server refuses waits its own hint, and
// neither pauses the lane nor cuts its pace: it tested the tracker's hold,
// not the rate; no other probe follows.
func TestProbeRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := counterFilled(t, false)
		start := time.Now()
		p, err := l.Acquire(t.Context(), "m", 1) // held until the probe, past half of the 2 s reset
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second || waited > 1200*time.Millisecond {
			t.Fatalf("the probe went after %v, want after a second and some", waited)
		}
		ln := l.lane("m")
		ln.mu.Lock()
		rate := ln.req.est.rate
		ln.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		wait := p.Done(Outcome{Result: Refused, Hint: 300 * time.Millisecond,
			Requests: Reading{Told: true, Limit: 20, Left: 0, Reset: 2*time.Second - time.Since(start) - 100*time.Millisecond}})
		ln.mu.Lock()
		defer ln.mu.Unlock()
		if wait < 300*time.Millisecond {
			t.Errorf("the refused probe waits %v, want its hint", wait)
		}
		if ln.until.After(ln.l.now()) || ln.req.est.rate != rate {
			t.Errorf("the refused probe paused the lane until %v or moved its pace from %v to %v", ln.until, rate, ln.req.est.rate)
		}
		if _, _, probe := ln.req.win.roomOrProbe(ln.l.now(), ln.req.count, 1, 0); probe {
			t.Errorf("another probe after one was refused")
		}
	})
}

// TestProbeBoth: a request that would probe both windows at once goes to
// probe neither, and waits until the sooner reset held: not 0, which sent
// waitWindows round without sleeping until one had passed.
func TestProbeBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := counterFilled(t, true)
		time.Sleep(1150 * time.Millisecond) // past both probes' time, before both resets (2.04 s)
		ln := l.lane("m")
		ln.mu.Lock()
		defer ln.mu.Unlock()
		now := ln.l.now()
		if ok, d := ln.fits(now, &turn{tokens: 1, start: now}); ok || d < ln.req.win.reset.Sub(now) {
			t.Errorf("a request probing both windows: fits %v, wait %v; want a wait until the reset, %v", ok, d, ln.req.win.reset.Sub(now))
		}
	})
}

// counterFilled is a limiter whose lane "m" sent 20 requests 5 ms apart,
// each answered as a sliding counter of 20 a second answers (its reset at
// 2 s), of requests and, with tokens, of tokens too.
func counterFilled(t *testing.T, tokens bool) *Limiter {
	l := New(Config{Adapt: true, Concurrency: 32})
	for i := range 20 {
		p, err := l.Acquire(t.Context(), "m", 1)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		o := Outcome{Result: Admitted, Requests: counterReading(time.Duration(i)*5*time.Millisecond, i+1)}
		if tokens {
			o.TokenWindow = o.Requests
		}
		p.Done(o)
	}
	return l
}

// TestProbeAfterHold: a window whose resets show a fixed window of 20 per
// 2 s (they stand, and move on by 2 s once reached), its sends gathered
// at its walls, as a sliding counter of 20 a second so sent shows too:
// past the probe of its opening (at 1.2 s, its kind unknown), none goes
// into it until it has held the lane for holdSpans of its resets (16 s)
// since, and the next one after twice that.
// Without it, such a counter, its one probe spent at the opening, was
// followed as the wall for whole runs, half its rate sent.
func TestProbeAfterHold(t *testing.T) {
	ms := time.Millisecond
	var w window
	seq := 0.0
	for k := range 26 {
		wall := time.Duration(2*k) * time.Second
		for i := range 20 {
			seq++
			sent := wall + 40*ms
			if k == 0 {
				sent = time.Duration(i) * 40 * ms // the opening, spread: the reset stands
			}
			w.sent(at(sent), seq)
			r := Reading{Told: true, Limit: 20, Left: 19 - i, Reset: wall + 2*time.Second - sent}
			w.read(r, at(sent), at(sent+600*ms), seq)
		}
		if !w.wall && k > 0 {
			t.Fatalf("after the wall at %v: not taken for a wall", wall)
		}
		probe := func(now time.Duration) bool {
			_, _, p := w.roomOrProbe(at(now), seq, 1, 0)
			return p
		}
		mid := wall + 1200*ms // past where a counter of 1 s gives one back
		switch got, want := probe(mid), k == 0 || k == 8 || k == 24; {
		case got != want:
			t.Errorf("a probe at %v: %v, want %v (the last probe at %v)", mid, got, want, w.held.last.Sub(t0))
		case got:
			w.probeSent(at(mid))
		}
	}
}
