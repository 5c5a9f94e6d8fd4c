package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// NewCmdMock returns `llmbatch mock` with its `serve` child.
func NewCmdMock(f *Factory) *cobra.Command {
	c := &cobra.Command{Use: "mock", Short: "The built-in fake OpenAI-compatible provider",
		Example: "  llmbatch mock serve --addr 127.0.0.1:8080 --rpm 600"}
	c.AddCommand(newCmdMockServe(f.IO, f.Stop))
	return c
}

func newCmdMockServe(ios *IOStreams, stop <-chan struct{}) *cobra.Command {
	var addr, opts string
	var cfg mock.Config
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the mock provider over HTTP until interrupted",
		Long: `Serve answers POST /v1/chat/completions deterministically ("echo: " and the
prompt), with optional latency, limits and faults, so pipelines and limits
can be tried without a key or a bill.`,
		Example: `  llmbatch mock serve --addr 127.0.0.1:8080 --rpm 600 --latency 200ms
  llmbatch run --base-url http://127.0.0.1:8080/v1 --model mock-1 testdata/tickets.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts != "" {
				parsed, err := mock.ParseOptions(opts)
				if err != nil {
					return usageErr("--options: %v", err)
				}
				cfg = mergeMock(parsed, cfg, c)
			}
			return serveMock(c.Context(), ios, stop, addr, cfg)
		},
	}
	f := c.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	f.DurationVar(&cfg.Latency, "latency", 0, "added to every answer")
	f.DurationVar(&cfg.Jitter, "jitter", 0, "plus a uniform random 0..jitter")
	f.IntVar(&cfg.RPM, "rpm", 0, "requests allowed per window, 0 for no limit")
	f.IntVar(&cfg.TPM, "tpm", 0, "estimated tokens allowed per window, 0 for no limit")
	f.DurationVar(&cfg.Window, "window", time.Minute, "the limit window")
	f.Float64Var(&cfg.FailRate, "fail-rate", 0, "fraction of requests answered with a 5xx")
	f.IntVar(&cfg.Quota, "quota", 0, "answers before every request gets 429 insufficient_quota; 0 for none")
	f.BoolVar(&cfg.NoLimitHeaders, "no-limit-headers", false, "send no x-ratelimit-* headers nor retry-after-ms (429s keep Retry-After)")
	f.BoolVar(&cfg.Bucket, "bucket", false, "limits are buckets refilling continuously, a whole one per window (as OpenAI's), not fixed windows")
	f.StringVar(&opts, "options", "", "the same settings as one string, as --mock of run takes")
	return c
}

// mergeMock lays the flags the user set over the parsed option string.
func mergeMock(parsed, flags mock.Config, c *cobra.Command) mock.Config {
	fl := c.Flags()
	if fl.Changed("latency") {
		parsed.Latency = flags.Latency
	}
	if fl.Changed("jitter") {
		parsed.Jitter = flags.Jitter
	}
	if fl.Changed("rpm") {
		parsed.RPM = flags.RPM
	}
	if fl.Changed("tpm") {
		parsed.TPM = flags.TPM
	}
	if fl.Changed("window") {
		parsed.Window = flags.Window
	}
	if fl.Changed("fail-rate") {
		parsed.FailRate = flags.FailRate
	}
	if fl.Changed("quota") {
		parsed.Quota = flags.Quota
	}
	if fl.Changed("bucket") {
		parsed.Bucket = flags.Bucket
	}
	if fl.Changed("no-limit-headers") {
		parsed.NoLimitHeaders = flags.NoLimitHeaders
	}
	return parsed
}

func serveMock(ctx context.Context, ios *IOStreams, stop <-chan struct{}, addr string, cfg mock.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("listen %s: %v", addr, err)
	}
	srv := &http.Server{Handler: mock.New(cfg), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(ios.ErrOut, "mock provider listening on http://%s/v1\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-stop:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
