package batch

import (
	"sync/atomic"
	"time"
)

// Counters are the live figures of a run, updated as it goes. Counters is
// safe for concurrent use: the pipeline writes, a progress display reads.
type Counters struct {
	Read          atomic.Int64 // input lines that held a record or were rejected
	Skipped       atomic.Int64 // items done by an earlier run
	SkippedFailed atomic.Int64 // items failed in an earlier run and not retried
	Done          atomic.Int64 // items answered in this run
	Failed        atomic.Int64 // items failed in this run
	Bad           atomic.Int64 // rejected input lines (this run or earlier)
	PromptTokens  atomic.Int64
	OutputTokens  atomic.Int64
	Cost          spending // dollars spent, when Config.Price knows the models

	outcomes atomic.Int64 // outcomes written: answered, failed or rejected
}

// Summary is what a run did, item by item. Requests and retries are the
// client's to count (llm.Client.Stats): merged requests make them differ.
type Summary struct {
	Read, Skipped, SkippedFailed, Done, Failed, Bad int64
	PromptTokens, OutputTokens                      int64
	Cost                                            float64 // dollars, for the answers whose model has a price
	CostUnknown                                     int64   // answers whose model has no price: Cost is then a floor
	Elapsed                                         time.Duration
	Output, Errors, Checkpoint                      string
}

// Complete reports whether every input item has a result, from this run or
// an earlier one.
func (s *Summary) Complete() bool { return s.Failed == 0 && s.SkippedFailed == 0 && s.Bad == 0 }

func (c *Counters) summary(elapsed time.Duration) Summary {
	s := Summary{
		Read: c.Read.Load(), Skipped: c.Skipped.Load(), SkippedFailed: c.SkippedFailed.Load(),
		Done: c.Done.Load(), Failed: c.Failed.Load(), Bad: c.Bad.Load(),
		PromptTokens: c.PromptTokens.Load(), OutputTokens: c.OutputTokens.Load(),
		Elapsed: elapsed,
	}
	s.Cost, s.CostUnknown = c.Cost.Dollars()
	return s
}
