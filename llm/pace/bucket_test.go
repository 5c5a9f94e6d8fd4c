package pace

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestBucketNotACounter: a bucket of 10,000 tokens refilling 10,000 a
// second, fed a little under that as a told pace with a debt feeds it (a
// long prompt, then short ones, then nothing until the debt is paid), has
// a time to full that stands while nothing is taken and moves on by what
// each long prompt takes: near alike, by a counter's move. Its readings
// keep in step with the bucket the tracker found (their resets the time
// to refill what is used), so it stays that bucket, neither a counter nor
// a wall.
func TestBucketNotACounter(t *testing.T) {
	const size, refill = 10_000.0, 10_000.0 // a second's bucket
	var w window
	w.told = refill
	level, last := size, at(0)
	seq, now := 0.0, time.Duration(0)
	send := func(n float64) {
		sentAt := at(now)
		level = min(size, level+refill*sentAt.Sub(last).Seconds()) - n
		last = sentAt
		seq += n
		w.sent(sentAt, seq)
		reset := time.Duration((size - level) / refill * float64(time.Second))
		w.read(Reading{Told: true, Limit: size, Left: int(level), Reset: reset}, sentAt, sentAt.Add(50*time.Millisecond), seq)
	}
	longs := []float64{2657, 3690, 2751, 3433, 3318, 2900, 2484, 2846, 3733, 4090, 3993, 4287, 3981, 4240, 3894}
	for k := range 40 {
		long := longs[k%len(longs)]
		send(long)
		for range 8 {
			now += 5 * time.Millisecond
			send(50)
		}
		// The debt: the long prompt and the short ones at 9,700 a second.
		now += time.Duration((long+400)/9700*float64(time.Second)) - 40*time.Millisecond
		if k == 2 && w.refill <= 0 {
			t.Fatalf("after %d long prompts: not taken for a bucket", k+1)
		}
	}
	if w.ctr.length != 0 || w.wall || w.refill <= 0 {
		t.Errorf("a bucket fed long prompts between gaps: counter of %v, wall %v, refill %v; want a bucket", w.ctr.length, w.wall, w.refill)
	}
}

// bucketServer is a token bucket of size tokens refilling at rate a
// second, starting full, that tells its level and its time to full in
// every answer, as OpenAI's headers do.
type bucketServer struct {
	mu                sync.Mutex
	size, rate, level float64
	last              time.Time
	refused           int
}

// serve takes n tokens sent now, if the bucket holds them.
func (b *bucketServer) serve(n float64) Outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.level = min(b.size, b.level+b.rate*now.Sub(b.last).Seconds())
	b.last = now
	o := Outcome{Result: Admitted}
	if b.level >= n {
		b.level -= n
	} else {
		b.refused++
		o = Outcome{Result: Refused, Tokens: true, Hint: time.Duration((n - b.level) / b.rate * float64(time.Second))}
	}
	o.TokenWindow = Reading{Told: true, Limit: int(b.size), Left: int(b.level), Reset: time.Duration((b.size - b.level) / b.rate * float64(time.Second))}
	return o
}

// runBucket sends 240 requests of 500 tokens through a lane told tpm, 16
// workers, answers 50 ms after each is sent, and returns the run's time.
func runBucket(t *testing.T, b *bucketServer, tpm int) time.Duration {
	l := New(Config{TPM: tpm, Adapt: true, Margin: 0.03})
	start := time.Now()
	b.level, b.last = b.size, start
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= 240 {
				for {
					p, err := l.Acquire(t.Context(), "m", 500)
					if err != nil {
						t.Error(err)
						return
					}
					o := b.serve(500)
					time.Sleep(50 * time.Millisecond)
					h := p.Done(o)
					if o.Result == Admitted {
						break
					}
					time.Sleep(h)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// TestToldBucketFollowed: told the rate of a token bucket whose headers
// show it (its level, its time to full), the lane keeps to the bucket as
// the tracker follows it, at the told rate and from the bucket's worth,
// not at the told rate less the margin from empty: 120,000 tokens through
// a bucket of 10,000 refilling 10,000 a second take 11 s at best, 12.4 s
// at the margin's pace (before, 12.4 s). A bucket that refills at twice
// the told rate is not the told window: the lane keeps to what it was
// told, the margin and all, and takes no more than the told rate allows.
func TestToldBucketFollowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bucketServer{size: 10_000, rate: 10_000}
		if d := runBucket(t, b, 600_000); d > 11500*time.Millisecond || b.refused > 0 {
			t.Errorf("told the bucket's rate: %v, %d refused; want at most 11.5 s, none", d, b.refused)
		}
		b = &bucketServer{size: 20_000, rate: 20_000}
		if d := runBucket(t, b, 600_000); d < 12*time.Second {
			t.Errorf("told half the bucket's rate: %v, want no less than the 12 s the told rate allows", d)
		}
	})
}

// TestBucketOffStep: a window taken for a bucket whose readings then say
// it has 31 left until a wall 0.3 s away (a fixed window's, not the
// second a bucket would take to refill what it used) is no bucket: the
// tracker does not let 80 tokens go 10 ms later as a bucket's refill.
func TestBucketOffStep(t *testing.T) {
	var w window
	seq := 0.0
	for i := range 10 { // a bucket's readings: 10,000 a second, 1,000 taken each 10 ms
		sentAt := at(time.Duration(i) * 10 * time.Millisecond)
		seq += 1000
		w.sent(sentAt, seq)
		left := 10_000 - 900*(i+1)
		reset := time.Duration(float64(10_000-left) / 10_000 * float64(time.Second))
		w.read(Reading{Told: true, Limit: 10_000, Left: left, Reset: reset}, sentAt, sentAt.Add(5*time.Millisecond), seq)
	}
	if w.refill <= 0 {
		t.Fatalf("not taken for a bucket: refill %v", w.refill)
	}
	sentAt := at(700 * time.Millisecond)
	seq += 80
	w.sent(sentAt, seq)
	w.read(Reading{Told: true, Limit: 10_000, Left: 31, Reset: 300 * time.Millisecond}, sentAt, sentAt.Add(5*time.Millisecond), seq)
	if ok, _ := w.room(at(710*time.Millisecond), seq, 80, 0); ok || w.refill > 0 {
		t.Errorf("31 left until a wall 0.3 s away: refill %v, room for 80 %v; want no bucket, no room", w.refill, ok)
	}
}
