package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/llmbatch/llmbatch/llm/pace/shared"
)

// shareLimits connects to --redis, when given, so that the key's limits
// are shared with the other processes using it (DESIGN §9), and sets the
// limiter's Sharer. A URL that cannot be used (malformed, nobody there, a
// wrong password) is a usage error: nothing has been sent. The returned
// func closes the connection.
func shareLimits(ctx context.Context, opts *RunOptions, rc *runConfigs, log *slog.Logger) (func(), error) {
	if opts.Redis == "" {
		return func() {}, nil
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixNano())
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := shared.Open(octx, shared.Config{URL: opts.Redis, ID: id})
	if err != nil {
		return nil, usageErr("--redis: %v", err) // the URL in it is masked
	}
	// The lane is named by a hash of the keys; several keys in rotation
	// share as one.
	key := strings.Join(rc.llm.APIKeys, "\x00") + rc.llm.APIKey
	c := shared.NewClient(s, rc.llm.BaseURL, key, log)
	c.CapInFlight(opts.SharedConc)
	rc.limiter.Shared = c
	log.Info("sharing the key's limits through redis", "redis", shared.MaskURL(opts.Redis), "shared_concurrency", opts.SharedConc)
	return func() { s.Close() }, nil
}

// sharedCap is what the dry run and the summary add about
// --shared-concurrency: "" without it.
func sharedCap(opts *RunOptions) string {
	if opts.SharedConc <= 0 {
		return ""
	}
	return fmt.Sprintf("; %d requests in flight at most among them (--shared-concurrency)", opts.SharedConc)
}

// printShared adds to the summary that the limits were shared, with
// --redis.
func printShared(opts *RunOptions) {
	if opts.Redis != "" {
		fmt.Fprintf(opts.IO.ErrOut, "limits shared through %s with the other processes using the key%s\n", shared.MaskURL(opts.Redis), sharedCap(opts))
	}
}
