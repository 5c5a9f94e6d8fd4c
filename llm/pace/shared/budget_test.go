package shared

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmbatch/llmbatch/internal/redistest"
)

// TestGiveIsTakenBack checks Give and Charge against what Take draws: a
// request given back after a draw from an idle budget is free again (a
// negative draw of redis_rate's would leave it taken), tokens given back
// beyond what the budget owes are no credit, and a charge beyond the burst
// is owed all the same.
func TestGiveIsTakenBack(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "p")
	lane := LaneName("u", "m", testKey)
	ctx := t.Context()
	if d, err := s.Take(ctx, lane, Requests, 60, 1); d != 0 || err != nil { // one a second
		t.Fatalf("Take() of a request from an idle budget = %v, %v", d, err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.Give(ctx, lane, Requests, 60, 1); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Take(ctx, lane, Requests, 60, 1); d != 0 {
		t.Errorf("Take() of a request after the one drawn was given back = wait %v, want none", d)
	}

	const perMinute = 60000 // 1000 tokens a second, burst 1000
	s.Take(ctx, lane, Tokens, perMinute, 1000)
	if err := s.Give(ctx, lane, Tokens, perMinute, 5000); err != nil {
		t.Fatal(err)
	}
	if d := owed(t, s, lane, Tokens); d != 0 {
		t.Errorf("after 5000 tokens were given back for 1000 taken, the budget owes %v, want 0", d)
	}
	s.Take(ctx, lane, Tokens, perMinute, 1000)
	if d, _ := s.Take(ctx, lane, Tokens, perMinute, 1000); d < 800*time.Millisecond {
		t.Errorf("a second burst right after a first, the budget having been given back more than it owed, waits %v, want about 1s: no credit", d)
	}
	if err := s.Charge(ctx, lane, Tokens, perMinute, 3000); err != nil {
		t.Fatal(err)
	}
	if d := owed(t, s, lane, Tokens); d < 3500*time.Millisecond || d > 4*time.Second {
		t.Errorf("after a burst of 1000 and a charge of 3000 more, the budget owes %v, want about 4s", d)
	}
}

// owed returns how long the lane's budget b is spent ahead of now, by
// Redis's clock (0: it is full).
func owed(t *testing.T, s *Store, lane string, b Budget) time.Duration {
	t.Helper()
	ctx := context.Background()
	p := s.rdb.Pipeline()
	tat := p.Get(ctx, redisRatePrefix+lane+":"+string(b))
	now := p.Time(ctx)
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	if tat.Err() == redis.Nil {
		return 0
	}
	at, err := tat.Float64()
	if err != nil {
		t.Fatal(err)
	}
	since2017 := now.Val().Sub(time.Unix(1483228800, 0)).Seconds()
	return max(time.Duration((at-since2017)*float64(time.Second)), 0)
}
