package llm

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Stats are a client's counters since New, for the run summary and reports.
type Stats struct {
	Attempts        int64            // HTTP attempts made
	Retries         int64            // attempts that were retries
	RateLimited     int64            // 429 answers about rates (not quota)
	RetriesByStatus map[string]int64 // failed attempts that were retried, by status ("429", "503", "timeout"…)
	Waited          time.Duration    // time spent waiting before retries (server hints and backoff)
	// TokenScale is, by model, what the pace counts a prompt's estimated
	// token as: the server's count of the prompts answered over their
	// estimates, kept a twentieth over that count when lower (see
	// [Request.Output]). Models no answer told usage of are absent.
	TokenScale map[string]float64
}

type stats struct {
	attempts, retries, limited, waited atomic.Int64
	mu                                 sync.Mutex
	byStatus                           map[string]int64
}

func (s *stats) retried(ae *APIError, d time.Duration) {
	s.retries.Add(1)
	s.waited.Add(int64(d))
	key := strconv.Itoa(ae.Status)
	if ae.Status == 0 {
		key = "network"
	}
	s.mu.Lock()
	if s.byStatus == nil {
		s.byStatus = map[string]int64{}
	}
	s.byStatus[key]++
	s.mu.Unlock()
}

// Stats returns the client's counters so far. Safe for concurrent use.
func (c *Client) Stats() Stats {
	s := &c.stats
	out := Stats{Attempts: s.attempts.Load(), Retries: s.retries.Load(), RateLimited: s.limited.Load(),
		Waited: time.Duration(s.waited.Load()), RetriesByStatus: map[string]int64{}, TokenScale: c.scale.factors()}
	s.mu.Lock()
	for k, v := range s.byStatus {
		out.RetriesByStatus[k] = v
	}
	s.mu.Unlock()
	return out
}
