package batch

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestRunEndsWithBlockingSilentStdin: a run reading a pipe in blocking mode
// (as a shell hands os.Stdin over) that stays open and silent still
// returns, with no goroutine left reading, when the API stops it, when it is
// interrupted and when its context is cancelled.
func TestRunEndsWithBlockingSilentStdin(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string // the mock's key: the run sends none, so a key makes a 401
		stop func(stop chan struct{}, cancel context.CancelFunc)
		want func(error) bool
	}{
		{"401", "right", func(chan struct{}, context.CancelFunc) {},
			func(err error) bool { return errors.As(err, new(*StopError)) }},
		{"Stop", "", func(s chan struct{}, _ context.CancelFunc) { close(s) },
			func(err error) bool { return errors.Is(err, ErrInterrupted) }},
		{"cancel", "", func(_ chan struct{}, cancel context.CancelFunc) { cancel() },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, mock.New(mock.Config{APIKey: tc.key}), prompts(1)...)
			ignore := goleak.IgnoreCurrent()
			var fds [2]int
			if err := syscall.Pipe(fds[:]); err != nil {
				t.Fatal(err)
			}
			pr, pw := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "writer")
			defer pr.Close()
			defer pw.Close()
			if polled(pr) {
				t.Fatal("the pipe is polled by the runtime; the test needs one in blocking mode")
			}
			pw.WriteString(`{"id":"a","prompt":"x"}` + "\n") // then nothing more, never closed
			stop := make(chan struct{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := j.config(func(c *Config) { c.Input, c.InputPath, c.Stop = pr, "-", stop })
			done := make(chan error, 1)
			go func() { _, err := Run(ctx, cfg); done <- err }()
			time.Sleep(100 * time.Millisecond) // the line is answered (or refused), the reader waits
			tc.stop(stop, cancel)
			select {
			case err := <-done:
				if !tc.want(err) {
					t.Errorf("Run() error = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return while stdin stayed open")
			}
			// The writer end is still open: no goroutine may still be reading.
			cfg.Client.CloseIdleConnections()
			j.server.CloseClientConnections()
			goleak.VerifyNone(t, ignore)
		})
	}
}

// TestEstimateEndsWithBlockingSilentStdin: the dry run reads its input as
// the run does (interruptibly, with a watch on Config.Stop and ctx), so on
// a pipe in blocking mode that stays open and silent (`sleep 30 |
// llmbatch run --dry-run -`) it returns when interrupted or cancelled, with
// no goroutine left reading.
func TestEstimateEndsWithBlockingSilentStdin(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(stop chan struct{}, cancel context.CancelFunc)
		want error
	}{
		{"Stop", func(s chan struct{}, _ context.CancelFunc) { close(s) }, ErrInterrupted},
		{"cancel", func(_ chan struct{}, cancel context.CancelFunc) { cancel() }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, mock.New(mock.Config{}), prompts(1)...)
			ignore := goleak.IgnoreCurrent()
			var fds [2]int
			if err := syscall.Pipe(fds[:]); err != nil {
				t.Fatal(err)
			}
			pr, pw := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "writer")
			defer pr.Close()
			defer pw.Close()
			pw.WriteString(`{"id":"a","prompt":"x"}` + "\n") // then nothing more, never closed
			stop := make(chan struct{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := j.config(func(c *Config) { c.Input, c.InputPath, c.Stop = pr, "-", stop })
			done := make(chan error, 1)
			go func() { _, err := EstimateRun(ctx, cfg); done <- err }()
			time.Sleep(50 * time.Millisecond) // the reader waits for a second line
			tc.stop(stop, cancel)
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Errorf("EstimateRun() error = %v, want %v", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("EstimateRun did not return while stdin stayed open")
			}
			goleak.VerifyNone(t, ignore)
		})
	}
}
