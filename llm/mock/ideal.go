package mock

import (
	"container/heap"
	"time"
	"unicode/utf8"
)

// Ideal returns the least time a client could take to have every prompt
// answered by New(cfg), each sent as one user message without max_tokens,
// at most workers at a time, if it knew the limiter's algorithm and state
// exactly: each request goes the moment a worker is free and the limits
// admit it, and is answered Latency later, so it is never refused. It is
// the better of two orders: the prompts' own, and first fit (the first
// prompt that fits goes, so short ones pass a long one that does not fit
// yet); on a request limit the two are the same.
//
// It plays cfg's own meters with explicit times, so the ideal is honest for
// each algorithm: a bucket starting full lets a burst through at once, a
// fixed window lets a whole window's worth through at its start (N requests
// take (⌈N/L⌉−1) windows, not N/rate), a sliding counter admits L−1 a window
// after the first (the window before always weighs a little), and a
// concurrency cap makes it a matter of latency. Jitter, faults, FalseClaims
// and Quota are left out.
func Ideal(cfg Config, prompts []string, workers int) time.Duration {
	costs := make([]int, len(prompts))
	for i, p := range prompts {
		costs[i] = estimateTokens(utf8.RuneCountInString(p))
	}
	inOrder := play(cfg, costs, workers, false)
	if cfg.TPM <= 0 {
		return inOrder // every request costs the same: first fit is the order
	}
	return min(inOrder, play(cfg, costs, workers, true))
}

// play sends requests of costs through New(cfg)'s meters as Ideal says, in
// order or first fit, and returns when the last is answered.
func play(cfg Config, costs []int, workers int, firstFit bool) time.Duration {
	cfg = cfg.withDefaults()
	start := time.Unix(0, 0)
	lim := newLimits(cfg, start)
	workers = max(workers, 1)
	var flight finishes // answer times of the requests in flight
	now, last := start, start
	for len(costs) > 0 {
		for flight.Len() > 0 && !flight[0].After(now) {
			heap.Pop(&flight)
			if lim.inFlight != nil {
				lim.inFlight.finish(1)
			}
		}
		if flight.Len() >= workers {
			now = flight[0]
			continue
		}
		i, wait := pick(&lim, now, costs, firstFit)
		if wait > 0 {
			// An answer may free the cap before the wait is over.
			if flight.Len() > 0 && flight[0].Before(now.Add(wait)) {
				wait = flight[0].Sub(now)
			}
			now = now.Add(max(wait, time.Nanosecond))
			continue
		}
		lim.decide(now, costs[i])
		costs = append(costs[:i:i], costs[i+1:]...)
		end := now.Add(cfg.Latency)
		heap.Push(&flight, end)
		last = maxTime(last, end)
	}
	return last.Sub(start)
}

// pick returns the request to send now, or how long until one fits: the
// first in order, or with firstFit the first that fits now.
func pick(lim *limits, now time.Time, costs []int, firstFit bool) (int, time.Duration) {
	soonest := lim.wait(now, costs[0])
	if soonest == 0 || !firstFit {
		return 0, soonest
	}
	// A request that does not fit now is no nearer to fitting than a
	// cheaper one, for every meter: only cheaper ones need asking.
	cheapest := costs[0]
	for i, c := range costs[1:] {
		if c >= cheapest {
			continue
		}
		w := lim.wait(now, c)
		if w == 0 {
			return i + 1, 0
		}
		cheapest, soonest = c, min(soonest, w)
	}
	return 0, soonest
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// finishes is a min-heap of times.
type finishes []time.Time

func (f finishes) Len() int           { return len(f) }
func (f finishes) Less(i, j int) bool { return f[i].Before(f[j]) }
func (f finishes) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *finishes) Push(x any)        { *f = append(*f, x.(time.Time)) }
func (f *finishes) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}
