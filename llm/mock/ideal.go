package mock

import (
	"container/heap"
	"time"
	"unicode/utf8"
)

// Ideal returns the least time a client could take to have every prompt
// answered by New(cfg), each sent as one user message without max_tokens,
// in order, at most workers at a time, if it knew the limiter's algorithm
// and state exactly: each request goes the moment a worker is free and the
// limits admit it, and is answered Latency later. So it is never refused.
//
// It plays cfg's own meters with explicit times, so the ideal is honest for
// each algorithm: a bucket starting full lets a burst through at once, a
// fixed window lets a whole window's worth through at its start (N requests
// take (⌈N/L⌉−1) windows, not N/rate), a sliding counter admits L−1 a window
// after the first (the window before always weighs a little), and a
// concurrency cap makes it a matter of latency. Jitter, faults, FalseClaims and Quota are left out. A client
// that reorders requests (short ones passing a long one that does not fit
// yet) may do a little better on a token limit.
func Ideal(cfg Config, prompts []string, workers int) time.Duration {
	cfg = cfg.withDefaults()
	start := time.Unix(0, 0)
	lim := newLimits(cfg, start)
	workers = max(workers, 1)
	var flight finishes // answer times of the requests in flight
	now, last := start, start
	for _, p := range prompts {
		cost := estimateTokens(utf8.RuneCountInString(p))
		for {
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
			wait := lim.wait(now, cost)
			if wait == 0 {
				break
			}
			// An answer may free the cap before the wait is over.
			if flight.Len() > 0 && flight[0].Before(now.Add(wait)) {
				wait = flight[0].Sub(now)
			}
			now = now.Add(max(wait, time.Nanosecond))
		}
		lim.decide(now, cost)
		end := now.Add(cfg.Latency)
		heap.Push(&flight, end)
		last = maxTime(last, end)
	}
	return last.Sub(start)
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
