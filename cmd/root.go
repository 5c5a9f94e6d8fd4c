// Package cmd holds the llmbatch commands: flags, environment, wiring,
// progress display and the mapping of errors to exit codes.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/llmbatch/llmbatch/batch"
)

// Exit codes, read by cron and CI.
const (
	exitOK          = 0   // every item has a result (this run or an earlier one)
	exitFailedItems = 1   // the run finished; some items failed (see the errors file)
	exitUsage       = 2   // usage, config or input file error; nothing was sent
	exitStopped     = 3   // stopped by the API or a write failure; rerun to resume
	exitQueued      = 4   // work is queued at the provider's Batch API (--batch-api --no-wait); rerun to collect
	exitInterrupted = 130 // interrupted by a signal; rerun to resume
)

// Version is set at build time with -ldflags "-X github.com/llmbatch/llmbatch/cmd.Version=…".
var Version = "dev"

// UsageError is a bad command line or configuration: the usage is shown and
// the exit code is 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErr(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// errSomeFailed ends a run whose summary was printed and that left items
// without a result.
var errSomeFailed = errors.New("some items have no result")

// Factory is what every command gets from main: the streams, the
// environment and the graceful-stop signal. Tests build their own.
type Factory struct {
	IO     *IOStreams
	Getenv func(string) string // os.Getenv in production
	Stop   <-chan struct{}     // closed by the first SIGINT/SIGTERM; may be nil
}

// NewRootCmd returns the llmbatch command with its children.
func NewRootCmd(f *Factory) *cobra.Command {
	ios := f.IO
	root := &cobra.Command{
		Use:   "llmbatch",
		Short: "Run large batches of prompts through OpenAI-compatible chat APIs",
		Long: `llmbatch runs a JSONL file of prompts through any OpenAI-compatible
/chat/completions endpoint at the provider's limits, retries what can be
retried, and resumes an interrupted job exactly where it stopped: rerun the
same command and no item is sent twice once its result is on disk.`,
		Example: `  llmbatch run --provider mock testdata/tickets.jsonl     # try it, no key needed
  llmbatch run --provider deepseek -j 16 -o out.jsonl in.jsonl
  llmbatch status out.jsonl                                # what is done, what is left
  llmbatch config init                                     # a commented llmbatch.toml`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &UsageError{err} })
	root.AddCommand(NewCmdRun(f, nil), NewCmdMock(f), NewCmdConfig(f), NewCmdVersion(ios))
	root.AddCommand(NewCmdStatus(f, nil), NewCmdCancel(f, nil))
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute() int {
	ios := System()
	ctx, stop, cancel := signalContext()
	defer cancel()
	root := NewRootCmd(&Factory{IO: ios, Getenv: os.Getenv, Stop: stop})
	c, err := root.ExecuteContextC(ctx)
	return exitCode(ios, c, err)
}

// codeOf maps the error a command returned to the process exit code.
func codeOf(err error) int {
	var ue *UsageError
	var se *batch.SetupError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errSomeFailed):
		return exitFailedItems
	case errors.As(err, &ue), errors.As(err, &se):
		return exitUsage
	case errors.Is(err, batch.ErrInterrupted), errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, new(*batch.QueuedError)):
		return exitQueued
	case errors.As(err, new(*batch.StopError)), errors.As(err, new(*batch.WriteError)):
		return exitStopped
	case isCobraUsage(err): // last: an API's message may hold the same words
		return exitUsage
	}
	return exitStopped // anything unforeseen: resuming is safe
}

// exitCode prints err once, with a hint fitting its code, and returns the code.
func exitCode(ios *IOStreams, c *cobra.Command, err error) int {
	code := codeOf(err)
	var ue *UsageError
	switch {
	case code == exitOK, code == exitFailedItems: // the summary said it all
	case code == exitInterrupted:
		fmt.Fprintln(ios.ErrOut, "llmbatch: interrupted; rerun the same command to resume")
	case errors.As(err, &ue) && c != nil:
		fmt.Fprintf(ios.ErrOut, "llmbatch: %v\nRun '%s --help' for usage.\n", err, c.CommandPath())
	case code == exitStopped:
		fmt.Fprintf(ios.ErrOut, "llmbatch: %v\nllmbatch: rerun the same command to resume\n", err)
	default:
		fmt.Fprintf(ios.ErrOut, "llmbatch: %v\n", err)
	}
	return code
}

// isCobraUsage recognises cobra's own argument errors, which are untyped.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "unknown flag", "unknown shorthand"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// signalContext turns the first SIGINT or SIGTERM into a graceful stop
// (requests in flight finish and are recorded) and the second into a
// cancelled context (requests in flight are abandoned; what is written stays).
func signalContext() (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			close(stop)
		case <-ctx.Done():
			return
		}
		select {
		case <-sigs:
			cancel()
			signal.Stop(sigs) // a third signal kills the process outright
		case <-ctx.Done():
		}
	}()
	return ctx, stop, func() { signal.Stop(sigs); cancel() }
}
