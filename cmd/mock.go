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
	c.AddCommand(newCmdMockServe(f.IO, f.Stop, nil))
	return c
}

// newCmdMockServe returns `llmbatch mock serve`; runF, when not nil, is
// called with the listen address and the merged settings instead of serving.
func newCmdMockServe(ios *IOStreams, stop <-chan struct{}, runF func(addr string, cfg mock.Config) error) *cobra.Command {
	var addr, opts string
	var cfg mock.Config
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the mock provider over HTTP until interrupted",
		Long: `Serve answers POST /v1/chat/completions deterministically ("echo: " and the
prompt), with optional latency, limits and faults, so pipelines and limits
can be tried without a key or a bill.

--limiter picks the algorithm counting --rpm and --tpm per --window: window
(fixed windows), bucket (a token bucket starting full, refilling
continuously, as OpenAI's), leaky (refusing at once when full, as nginx's
limit_req with burst and nodelay; --burst sets the burst), sliding-log,
sliding-counter (which counts refused requests too), gcra, concurrency (only
--in-flight requests in flight) or penalty (a fixed window that refuses
everything for --penalty after a refusal). --limit-headers picks what the
answers say: openai, ietf, kong, github, traefik, retry-after or none (an
HTML 429 page).`,
		Example: `  llmbatch mock serve --addr 127.0.0.1:8080 --rpm 600 --latency 200ms
  llmbatch mock serve --rpm 20 --window 1s --limiter leaky --burst 0.25 --limit-headers none
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
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			if runF != nil {
				return runF(addr, cfg)
			}
			return serveMock(c.Context(), ios, stop, addr, cfg)
		},
	}
	mockFlags(c, &cfg)
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	c.Flags().StringVar(&opts, "options", "", "the same settings as one string, as --mock of run takes")
	return c
}

// mockFlags defines the flags that set cfg.
func mockFlags(c *cobra.Command, cfg *mock.Config) {
	f := c.Flags()
	f.DurationVar(&cfg.Latency, "latency", 0, "added to every answer")
	f.DurationVar(&cfg.Jitter, "jitter", 0, "plus a uniform random 0..jitter")
	f.IntVar(&cfg.RPM, "rpm", 0, "requests allowed per window, 0 for no limit")
	f.IntVar(&cfg.TPM, "tpm", 0, "estimated tokens allowed per window, 0 for no limit")
	f.DurationVar(&cfg.Window, "window", time.Minute, "the limit window")
	f.StringVar(&cfg.Limiter, "limiter", "", "window, bucket, leaky, sliding-log, sliding-counter, gcra, concurrency or penalty (default window)")
	f.Float64Var(&cfg.Burst, "burst", 0, "leaky, gcra: share of a window's limit let through at once beyond the first, e.g. 0.25")
	f.DurationVar(&cfg.Penalty, "penalty", 0, "penalty: how long every request is refused after a refusal (default the window)")
	f.IntVar(&cfg.InFlight, "in-flight", 0, "requests in flight at most, 429 beyond; 0 for no cap (1 with --limiter concurrency)")
	f.StringVar(&cfg.Headers, "limit-headers", "", "openai, ietf, kong, github, traefik, retry-after or none (default openai)")
	f.Float64Var(&cfg.FalseClaims, "false-claims", 0, "fraction of requests refused at random with headers claiming the token window is spent for 6 minutes")
	f.Float64Var(&cfg.FailRate, "fail-rate", 0, "fraction of requests answered with a 5xx")
	f.IntVar(&cfg.Quota, "quota", 0, "answers before every request gets 429 insufficient_quota; 0 for none")
	f.BoolVar(&cfg.NoLimitHeaders, "no-limit-headers", false, "--limit-headers retry-after: no limit headers, 429s with Retry-After only")
	f.BoolVar(&cfg.Bucket, "bucket", false, "--limiter bucket: limits refill continuously, a whole one per window, as OpenAI's")
}

// mergeMock lays the flags the user set over the parsed option string.
func mergeMock(parsed, flags mock.Config, c *cobra.Command) mock.Config {
	fl := c.Flags()
	for name, set := range map[string]func(){
		"latency":          func() { parsed.Latency = flags.Latency },
		"jitter":           func() { parsed.Jitter = flags.Jitter },
		"rpm":              func() { parsed.RPM = flags.RPM },
		"tpm":              func() { parsed.TPM = flags.TPM },
		"window":           func() { parsed.Window = flags.Window },
		"limiter":          func() { parsed.Limiter = flags.Limiter },
		"burst":            func() { parsed.Burst = flags.Burst },
		"penalty":          func() { parsed.Penalty = flags.Penalty },
		"in-flight":        func() { parsed.InFlight = flags.InFlight },
		"limit-headers":    func() { parsed.Headers = flags.Headers },
		"false-claims":     func() { parsed.FalseClaims = flags.FalseClaims },
		"fail-rate":        func() { parsed.FailRate = flags.FailRate },
		"quota":            func() { parsed.Quota = flags.Quota },
		"bucket":           func() { parsed.Bucket = flags.Bucket },
		"no-limit-headers": func() { parsed.NoLimitHeaders = flags.NoLimitHeaders },
	} {
		if fl.Changed(name) {
			set()
		}
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
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close() // connections still busy after the grace period
	}
	<-done // Serve has returned (ErrServerClosed): its goroutine has ended
	return err
}
