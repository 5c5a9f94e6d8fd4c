package mock

import (
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		in   string
		want Config
	}{
		{"", Config{}},
		{"  ", Config{}},
		{
			"latency=20ms,jitter=5ms,rpm=1200,tpm=0,window=1m,fail=0.05,seed=1,quota=0,model=x,key=sk-1",
			Config{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, RPM: 1200, Window: time.Minute,
				FailRate: 0.05, Seed: 1, Model: "x", APIKey: "sk-1"},
		},
		{" rpm = 20 , window=1s, ", Config{RPM: 20, Window: time.Second}},
		{"fail=1,quota=3,tpm=40000", Config{FailRate: 1, Quota: 3, TPM: 40000}},
		{"key=a=b", Config{APIKey: "a=b"}},
		{"headers=off,tpm=10", Config{NoLimitHeaders: true, TPM: 10}},
		{"headers=on", Config{}},
		{"limits=bucket,tpm=5", Config{Bucket: true, TPM: 5}},
		{"limits=window", Config{}},
		{"limiter=bucket", Config{Bucket: true}},
		{"limiter=sliding-counter,rpm=20,window=1s", Config{Limiter: LimiterSlidingCounter, RPM: 20, Window: time.Second}},
		{"limits=leaky,burst=0.25", Config{Limiter: LimiterLeaky, Burst: 0.25}},
		{"limiter=penalty,penalty=10s", Config{Limiter: LimiterPenalty, Penalty: 10 * time.Second}},
		{"windows=first,rpm=20", Config{FirstWindows: true, RPM: 20}},
		{"windows=aligned", Config{}},
		{"limiter=concurrency,inflight=4", Config{Limiter: LimiterConcurrency, InFlight: 4}},
		{"headers=ietf", Config{Headers: HeadersIETF}},
		{"headers=openai", Config{}},
		{"headers=retry-after", Config{NoLimitHeaders: true}},
		{"headers=none,false-claims=0.1", Config{Headers: HeadersNone, FalseClaims: 0.1}},
	}
	for _, tt := range tests {
		got, err := ParseOptions(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseOptions(%q) = %+v, %v; want %+v, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseOptionsErrors(t *testing.T) {
	tests := []struct {
		in      string
		mention string // the error must name it
	}{
		{"speed=3", `"speed"`},
		{"rpm=12,bogus=1", `"bogus"`},
		{"latency=fast", `"fast" for option latency`},
		{"latency=-1s", `"-1s" for option latency`},
		{"window=10", `"10" for option window`},
		{"rpm=-1", `"-1" for option rpm`},
		{"tpm=1.5", `"1.5" for option tpm`},
		{"quota=many", `"many" for option quota`},
		{"fail=1.5", `"1.5" for option fail`},
		{"windows=rolling", `"rolling" for option windows`},
		{"fail=NaN", `"NaN" for option fail`},
		{"seed=-3", `"-3" for option seed`},
		{"headers=no", `"no" for option headers`},
		{"limits=sliding", `"sliding" for option limits`},
		{"rpm=1,rpm=2", `"rpm" given twice`},
		{"limits=bucket,limiter=gcra", `"limiter" given twice`},
		{"limiter=nginx", `"nginx" for option limiter`},
		{"headers=aws", `"aws" for option headers`},
		{"burst=2", `"2" for option burst`},
		{"false-claims=-0.1", `"-0.1" for option false-claims`},
		{"inflight=x", `"x" for option inflight`},
		{"rpm=1,sk-secret", "option 2 has no '='"},
	}
	for _, tt := range tests {
		cfg, err := ParseOptions(tt.in)
		if err == nil {
			t.Errorf("ParseOptions(%q) = %+v, nil; want an error", tt.in, cfg)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tt.mention) || !strings.HasPrefix(msg, "mock: ") {
			t.Errorf("ParseOptions(%q) error %q does not mention %s", tt.in, msg, tt.mention)
		}
		if strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("ParseOptions(%q) error %q shows what may be a key", tt.in, err)
		}
	}
}
