package shared

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
)

// syncBuffer is a log sink safe for the clients' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestClientsShareThePace checks that three processes' clients, each
// taking as fast as it may at the key's 20 a second, send 20 a second in
// all.
func TestClientsShareThePace(t *testing.T) {
	srv := redistest.Start(t)
	var sent atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 3 {
		c := NewClient(open(t, srv, "p"+string(rune('a'+i))), "https://api.example.com/v1", testKey, nil)
		wg.Go(func() {
			for time.Since(start) < 1500*time.Millisecond {
				if err := c.Take(t.Context(), "m", 20, 0, 100); err != nil {
					t.Error(err)
					return
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	if n := sent.Load(); n == 0 || n > 36 {
		t.Errorf("three clients sent %d in about 1.5s at a shared 20/s, want 30 or so at most between them", n)
	}
}

// TestClientRedisAway checks that a client whose Redis goes away warns
// once, goes on at its share of the pace, and shares again once Redis is
// back.
func TestClientRedisAway(t *testing.T) {
	srv := redistest.Start(t)
	var logs syncBuffer
	a := NewClient(open(t, srv, "a"), "u", testKey, slog.New(slog.NewTextHandler(&logs, nil)))
	b := NewClient(open(t, srv, "b"), "u", testKey, nil)
	ctx := t.Context()
	for _, c := range []*Client{a, b} { // both beat: two live processes
		if err := c.Take(ctx, "m", 100, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.Live("m"); n != 1 && n != 2 {
		t.Fatalf("Live() = %d", n)
	}
	a.lanes["m"].beat = time.Time{} // beat again at the next take
	a.Take(ctx, "m", 100, 0, 1)
	if n := a.Live("m"); n != 2 {
		t.Fatalf("Live() after both beat = %d, want 2", n)
	}
	srv.Stop()
	start := time.Now()
	for range 20 {
		if err := a.Take(ctx, "m", 100, 0, 1); err != nil {
			t.Fatalf("Take() with Redis away = %v, want no error", err)
		}
	}
	// 20 at a share of 50/s: about 0.4s.
	if d := time.Since(start); d < 300*time.Millisecond || d > 10*time.Second { // at its share, not at once; and not stuck
		t.Errorf("20 takes at half of 100/s with Redis away took %v, want about 0.4s", d)
	}
	if n := strings.Count(logs.String(), "redis is away"); n != 1 {
		t.Errorf("warned %d times that Redis is away, want once:\n%s", n, logs.String())
	}
	srv.Restart()
	time.Sleep(retryEvery + 100*time.Millisecond)
	a.Take(ctx, "m", 100, 0, 1)
	if !strings.Contains(logs.String(), "redis is back") {
		t.Errorf("no word that Redis is back:\n%s", logs.String())
	}
	a.Pause(ctx, "m", 2*time.Second)
	if d := b.Paused(ctx, "m"); d < time.Second {
		t.Errorf("after Redis came back, another process sees a pause of %v, want about 2s", d)
	}
}
