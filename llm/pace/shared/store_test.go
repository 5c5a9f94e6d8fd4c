package shared

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmbatch/llmbatch/internal/redistest"
)

const testKey = "sk-shared-test-0123456789"

func open(t *testing.T, srv *redistest.Server, id string) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{URL: srv.URL(""), ID: id})
	if err != nil {
		t.Fatalf("Open(%s) = %v", srv.URL(""), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenRefusesBadURLs(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret-pw")
	tests := []struct{ name, url string }{
		{"not a redis URL", "http://" + srv.Addr},
		{"wrong password", "redis://:wrong-pw@" + srv.Addr + "/0"},
		{"no password", srv.URL("")},
		{"nobody listening", "redis://127.0.0.1:1/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(t.Context(), Config{URL: tt.url, ID: "p"})
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("Open(%q) = %v, want a *URLError", tt.url, err)
			}
			if strings.Contains(err.Error(), "wrong-pw") {
				t.Errorf("Open(%q) error shows the password: %v", tt.url, err)
			}
		})
	}
	s, err := Open(t.Context(), Config{URL: srv.URL("s3cret-pw"), ID: "p"})
	if err != nil {
		t.Fatalf("Open with the right password = %v", err)
	}
	s.Close()
}

func TestMaskURL(t *testing.T) {
	if got := MaskURL("redis://:pw@h:6379/0"); strings.Contains(got, "pw@") || !strings.Contains(got, "h:6379") {
		t.Errorf("MaskURL() = %q, want the password masked and the host kept", got)
	}
}

// TestTakeIsShared checks that three stores drawing from one lane at once
// get the lane's rate between them, not three times it.
func TestTakeIsShared(t *testing.T) {
	srv := redistest.Start(t)
	lane := LaneName("https://api.example.com/v1", "m", testKey)
	const perMinute = 1200 // 20/s
	start := time.Now()
	var mu sync.Mutex
	taken := 0
	var wg sync.WaitGroup
	for i := range 3 {
		s := open(t, srv, "p"+string(rune('a'+i)))
		wg.Go(func() {
			for time.Since(start) < 1500*time.Millisecond {
				d, err := s.Take(t.Context(), lane, Requests, perMinute, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d > 0 {
					time.Sleep(d)
					continue
				}
				mu.Lock()
				taken++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// 1.5 s at 20/s with no burst: 30 at most, give or take the edges
	// (fewer on a loaded machine); alone, each store would take as many.
	if taken == 0 || taken > 33 {
		t.Errorf("three stores took %d requests in 1.5s from a lane of 20/s, want 30 at most between them", taken)
	}
}

func TestTokensTakeAndGive(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "p")
	lane := LaneName("u", "m", testKey)
	ctx := t.Context()
	const perMinute = 60000 // 1000/s, burst 1000
	if d, err := s.Take(ctx, lane, Tokens, perMinute, 1000); d != 0 || err != nil {
		t.Fatalf("Take(1000) from a full budget = %v, %v; want 0", d, err)
	}
	if d, _ := s.Take(ctx, lane, Tokens, perMinute, 800); d < 500*time.Millisecond {
		t.Fatalf("Take(800) from a spent budget = %v, want a wait of about 0.8s", d)
	}
	if err := s.Give(ctx, lane, Tokens, perMinute, 900); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Take(ctx, lane, Tokens, perMinute, 800); d != 0 {
		t.Errorf("Take(800) after 900 were given back = %v, want 0", d)
	}
	big := 5000 // more than a second's worth: allowed into a full budget, not refused for ever
	if err := s.Give(ctx, lane, Tokens, perMinute, 5000); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if d, _ := s.Take(ctx, lane, Tokens, perMinute, big); d != 0 {
		t.Errorf("Take(%d) from a full budget = %v, want 0", big, d)
	}
}

func TestPauseOnlyExtends(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, "a"), open(t, srv, "b")
	lane := LaneName("u", "m", testKey)
	ctx := t.Context()
	if d, err := b.Paused(ctx, lane); d != 0 || err != nil {
		t.Fatalf("Paused() before any pause = %v, %v", d, err)
	}
	if err := a.Pause(ctx, lane, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Pause(ctx, lane, time.Second); err != nil {
		t.Fatal(err)
	}
	if d, _ := b.Paused(ctx, lane); d < 2500*time.Millisecond || d > 3*time.Second {
		t.Errorf("Paused() seen by another process = %v, want about 3s (a shorter pause does not shorten it)", d)
	}
}

func TestLearnedAndBeat(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, "a"), open(t, srv, "b")
	lane := LaneName("u", "m", testKey)
	ctx := t.Context()
	if _, ok, err := b.Learned(ctx, lane); ok || err != nil {
		t.Fatalf("Learned() before any = %v, %v", ok, err)
	}
	if l, err := a.Publish(ctx, lane, Learned{RPM: 1164.5, TPM: 9000}); err != nil || l.Ver != 1 || l.By != "a" {
		t.Fatalf("Publish() = %+v, %v; want version 1 by a", l, err)
	}
	if l, err := b.Publish(ctx, lane, Learned{RPM: 1164.5, TPM: 9000}); err != nil || l.Ver != 2 {
		t.Fatalf("a second Publish() = %+v, %v; want version 2", l, err)
	}
	if l, ok, _ := b.Learned(ctx, lane); !ok || l.RPM != 1164.5 || l.TPM != 9000 || l.Ver != 2 || l.By != "b" {
		t.Errorf("Learned() = %+v, %v; want what b published last", l, ok)
	}
	if n, leads, _ := a.Beat(ctx, lane, 300*time.Millisecond); n != 1 || !leads {
		t.Errorf("Beat() alone = %d, %v; want 1, leading", n, leads)
	}
	if n, leads, _ := b.Beat(ctx, lane, time.Minute); n != 2 || leads {
		t.Errorf("Beat() of a second process = %d, %v; want 2, not leading", n, leads)
	}
	time.Sleep(400 * time.Millisecond)
	if n, leads, _ := b.Beat(ctx, lane, time.Minute); n != 1 || !leads {
		t.Errorf("Beat() after the first process stopped beating = %d, %v; want 1, leading in its place", n, leads)
	}
}

func TestLeases(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, "a"), open(t, srv, "b")
	lane := LaneName("u", "m", testKey)
	ctx := t.Context()
	l1, ok1, _ := a.Lease(ctx, lane, 2, 300*time.Millisecond)
	_, ok2, _ := b.Lease(ctx, lane, 2, time.Minute)
	_, ok3, _ := b.Lease(ctx, lane, 2, time.Minute)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("three leases of 2 slots = %v %v %v, want true true false", ok1, ok2, ok3)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Lease(ctx, lane, 2, time.Minute); !ok {
		t.Errorf("a lease after one was released was refused")
	}
	// A killed process's lease lapses on its own.
	srv2 := redistest.Start(t)
	c := open(t, srv2, "c")
	c.Lease(ctx, lane, 1, 200*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	if _, ok, _ := c.Lease(ctx, lane, 1, time.Minute); !ok {
		t.Errorf("a lapsed lease still held its slot")
	}
}

// TestKeyNeverInRedis scans every name and value a store wrote.
func TestKeyNeverInRedis(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "p")
	ctx := t.Context()
	lane := LaneName("https://user:pw@api.example.com/v1?key="+testKey, "m", testKey)
	s.Take(ctx, lane, Requests, 60, 1)
	s.Take(ctx, lane, Tokens, 6000, 10)
	s.Pause(ctx, lane, time.Minute)
	s.Publish(ctx, lane, Learned{RPM: 1})
	s.Beat(ctx, lane, time.Minute)
	s.Lease(ctx, lane, 1, time.Minute)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil || len(keys) < 5 {
		t.Fatalf("KEYS * = %v, %v; want the store's keys", keys, err)
	}
	for _, k := range keys {
		dump, _ := rdb.Dump(ctx, k).Result()
		for _, secret := range []string{testKey, "pw"} {
			if strings.Contains(k, secret) || strings.Contains(dump, secret) {
				t.Errorf("Redis key %q (or its value) holds %q", k, secret)
			}
		}
	}
}

// TestRedisAwayAndBack checks that a store fails fast while Redis is
// down and works again, without being reopened, once it is back.
func TestRedisAwayAndBack(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "p")
	lane := LaneName("u", "m", testKey)
	ctx := t.Context()
	srv.Stop()
	start := time.Now()
	if _, err := s.Take(ctx, lane, Requests, 60, 1); err == nil {
		t.Fatal("Take() with Redis down = nil error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Take() with Redis down took %v, want a quick failure", d)
	}
	srv.Restart()
	if _, _, err := s.Beat(ctx, lane, time.Minute); err != nil {
		t.Errorf("Beat() after Redis came back = %v", err)
	}
}
