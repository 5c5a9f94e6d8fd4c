package mock

import (
	"strings"
	"testing"
	"time"
)

func TestIdeal(t *testing.T) {
	short := func(n int) []string {
		p := make([]string, n)
		for i := range p {
			p[i] = "a short prompt"
		}
		return p
	}
	s := time.Second
	lat := 50 * time.Millisecond
	rate20 := func(limiter string) Config {
		return Config{RPM: 20, Window: s, Latency: lat, Limiter: limiter, Burst: 0.25}
	}
	tests := []struct {
		name    string
		cfg     Config
		prompts []string
		workers int
		want    time.Duration
	}{
		{"fixed window: a whole window at each start", rate20(LimiterWindow), short(600), 32, 29*s + lat},
		{"token bucket: 20 at once, then 20 a second", rate20(LimiterBucket), short(600), 32, 29*s + lat},
		{"leaky bucket: 6 at once, then 20 a second", rate20(LimiterLeaky), short(600), 32, 29700*time.Millisecond + lat},
		{"gcra: as the leaky bucket", rate20(LimiterGCRA), short(600), 32, 29700*time.Millisecond + lat},
		{"sliding log: as the fixed window", rate20(LimiterSlidingLog), short(600), 32, 29*s + lat},
		// A window after a busy one admits L-1: at its end the previous
		// window still weighs a little. 20, then 19 a window: the 600th
		// comes 9/19 into window 31.
		{"sliding counter: the first window, then 19 a second", rate20(LimiterSlidingCounter), short(600), 32, 31*s + 9*s/19 + lat},
		{"penalty box: never refused, a fixed window", rate20(LimiterPenalty), short(600), 32, 29*s + lat},
		{"concurrency cap of 1: one after another", Config{Limiter: LimiterConcurrency, InFlight: 1, Latency: lat}, short(600), 32, 30 * s},
		{"no limit: the workers bound it", Config{Latency: s}, short(64), 32, 2 * s},
		{"a rate the workers cannot keep up with", Config{RPM: 40, Window: s, Latency: 2 * s, Limiter: LimiterBucket}, short(40), 8, 10 * s},
		{"tokens: 100 a second, 4 × 100 tokens from a full bucket", Config{TPM: 100, Window: s, Limiter: LimiterBucket},
			[]string{strings.Repeat("x", 400), strings.Repeat("x", 400), strings.Repeat("x", 400), strings.Repeat("x", 400)}, 32, 3 * s},
	}
	for _, tt := range tests {
		// Within a microsecond: the buckets' arithmetic is in floating point.
		if got := Ideal(tt.cfg, tt.prompts, tt.workers); got < tt.want-time.Microsecond || got > tt.want+time.Microsecond {
			t.Errorf("%s: Ideal = %v, want %v", tt.name, got, tt.want)
		}
	}
}
