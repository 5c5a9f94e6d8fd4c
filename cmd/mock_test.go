package cmd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

func TestNewCmdMockServe(t *testing.T) {
	tests := []struct {
		args string
		want mock.Config
	}{
		{"", mock.Config{Window: time.Minute}},
		{"--rpm 20 --window 1s --limiter leaky --burst 0.25 --limit-headers none",
			mock.Config{RPM: 20, Window: time.Second, Limiter: mock.LimiterLeaky, Burst: 0.25, Headers: mock.HeadersNone}},
		{"--limiter penalty --penalty 10s --in-flight 3 --false-claims 0.1 --tpm 5",
			mock.Config{TPM: 5, Window: time.Minute, Limiter: mock.LimiterPenalty, Penalty: 10 * time.Second, InFlight: 3, FalseClaims: 0.1}},
		{"--bucket --no-limit-headers", mock.Config{Window: time.Minute, Bucket: true, NoLimitHeaders: true}},
		// Flags the user set win over the option string; the others keep its values.
		{"--options limiter=gcra,headers=kong,rpm=7,window=2s --rpm 9 --limit-headers ietf",
			mock.Config{RPM: 9, Window: 2 * time.Second, Limiter: mock.LimiterGCRA, Headers: mock.HeadersIETF}},
	}
	for _, tt := range tests {
		ios, _, _, _ := Test()
		var got mock.Config
		c := newCmdMockServe(ios, nil, func(_ string, cfg mock.Config) error { got = cfg; return nil })
		c.SetArgs(strings.Fields(tt.args))
		if err := c.Execute(); err != nil {
			t.Errorf("mock serve %s: %v", tt.args, err)
			continue
		}
		if got != tt.want {
			t.Errorf("mock serve %s: config %+v, want %+v", tt.args, got, tt.want)
		}
	}
	for _, args := range []string{"--limiter nginx", "--limit-headers aws", "--burst 2", "--options limiter=x"} {
		ios, _, _, _ := Test()
		c := newCmdMockServe(ios, nil, func(string, mock.Config) error { return nil })
		c.SetArgs(strings.Fields(args))
		c.SilenceErrors, c.SilenceUsage = true, true
		var ue *UsageError
		if err := c.Execute(); !errors.As(err, &ue) {
			t.Errorf("mock serve %s: error %v, want a usage error", args, err)
		}
	}
}
