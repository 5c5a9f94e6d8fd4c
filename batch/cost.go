package batch

import (
	"errors"
	"fmt"
	"sync"
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
	mu      sync.Mutex
	dollars float64 // a float: items costing fractions of a micro-dollar add up
	unknown int64   // answers of a model without a price
}

func (s *spending) add(c float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dollars += c
	return s.dollars
}

func (s *spending) addUnknown() {
	s.mu.Lock()
	s.unknown++
	s.mu.Unlock()
}

// Dollars returns the cost so far, and how many answers had no price.
func (s *spending) Dollars() (float64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dollars, s.unknown
}

// answerPrice returns the price of an answer with usage u: the answering
// model's (the server's name for it, else the one asked for: they differ
// after a fallback, or by a version suffix). ok is false when there is
// nothing to count: no usage, no price table, or no price for either
// model, which is counted as a cost unknown.
func (c *Config) answerPrice(asked, answered string, u *usage) (p Price, ok bool) {
	if u == nil || c.Price == nil {
		return p, false
	}
	if p, ok = c.Price(answered); !ok {
		p, ok = c.Price(asked)
	}
	if !ok {
		c.Counters.Cost.addUnknown()
	}
	return p, ok
}

// spend counts the cost of one answered item, at the price of the model
// that answered (the server's name for it, else the one asked for: they
// differ after a fallback, or by a version suffix), and stops the run once
// the budget is spent; requests already in flight still finish and are
// written. The budget is per run: a rerun starts from zero.
func (r *run) spend(asked, answered string, u *usage) {
	p, ok := r.cfg.answerPrice(asked, answered, u)
	if !ok {
		return
	}
	total := r.cfg.Counters.Cost.add(p.Cost(int64(u.PromptTokens), int64(u.CompletionTokens)))
	if max := r.cfg.MaxCost; max > 0 && total >= max {
		r.stop(&StopError{fmt.Errorf("%w: $%.4f of $%.4f", ErrBudget, total, max)})
	}
}
