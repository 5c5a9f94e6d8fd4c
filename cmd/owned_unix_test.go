//go:build unix

package cmd

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestProgressCounterIsOwned: the progress display's count of the input
// is a goroutine the display owns: stopping the display ends and joins it,
// even when the input is a named pipe (which it must not read: the run
// reads it, and opening it blocks until a writer comes).
func TestProgressCounterIsOwned(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()
	ios, _, _, _ := Test()
	opts := &RunOptions{IO: ios, Input: fifo, Progress: "on", LogEvery: time.Hour}
	stop := startProgress(t.Context(), opts, &batch.Counters{}, func() llm.Stats { return llm.Stats{} })
	stop()
	goleak.VerifyNone(t, ignore)
}

// TestServeMockJoinsServe: `mock serve` returns only once its Serve
// goroutine has ended, every time.
func TestServeMockJoinsServe(t *testing.T) {
	ios, _, _, _ := Test()
	for i := range 30 {
		stop := make(chan struct{})
		close(stop)
		if err := serveMock(context.Background(), ios, stop, "127.0.0.1:0", mock.Config{}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "cmd.serveMock.func") {
			t.Fatalf("round %d: serveMock returned with its Serve goroutine running:\n%s", i, st)
		}
	}
}
