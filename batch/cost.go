package batch

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	In, Out float64
}

// Cost returns the price of prompt and completion tokens at p.
func (p Price) Cost(prompt, completion int64) float64 {
	return (float64(prompt)*p.In + float64(completion)*p.Out) / 1e6
}

// ErrBudget is the cause of the StopError of a run that reached --max-cost.
var ErrBudget = errors.New("the cost budget (--max-cost) is spent")

// spending adds up what the answers cost, for the summary and --max-cost.
// Safe for concurrent use: the writer adds, a progress display reads.
type spending struct {
	micro   atomic.Int64 // millionths of a dollar
	unknown atomic.Int64 // answers of a model without a price
}

func (s *spending) add(c float64) { s.micro.Add(int64(c * 1e6)) }

// Dollars returns the cost so far.
func (s *spending) Dollars() float64 { return float64(s.micro.Load()) / 1e6 }

// spend counts the cost of one answered item and stops the run once the
// budget is spent; requests already in flight still finish and are written.
func (r *run) spend(model string, u *usage) {
	if u == nil || r.cfg.Price == nil {
		return
	}
	p, ok := r.cfg.Price(model)
	if !ok {
		r.cfg.Counters.Cost.unknown.Add(1)
		return
	}
	r.cfg.Counters.Cost.add(p.Cost(int64(u.PromptTokens), int64(u.CompletionTokens)))
	if max := r.cfg.MaxCost; max > 0 && r.cfg.Counters.Cost.Dollars() >= max {
		r.stop(&StopError{fmt.Errorf("%w: $%.4f of $%.4f", ErrBudget, r.cfg.Counters.Cost.Dollars(), max)})
	}
}
