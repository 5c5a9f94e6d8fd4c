package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm"
)

// countLines counts the newlines of a regular input file in the background,
// for the progress total; the returned func gives 0 until it is known (and
// always for stdin).
func countLines(path string) func() int64 {
	var total atomic.Int64
	if path == "-" {
		return total.Load
	}
	go func() {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		var n int64
		var last byte = '\n'
		for {
			k, err := f.Read(buf)
			if k > 0 {
				n += int64(bytes.Count(buf[:k], []byte{'\n'}))
				last = buf[k-1]
			}
			if err != nil {
				break
			}
		}
		if last != '\n' {
			n++
		}
		total.Store(n)
	}()
	return total.Load
}

// startProgress shows the run's progress until the returned func is called:
// a bar when ErrOut is a terminal (or --progress on), otherwise a log line
// every LogEvery, with a warning when nothing has finished for a minute.
func startProgress(ctx context.Context, opts *RunOptions, c *batch.Counters, total func() int64) func() {
	if opts.Progress == "off" || opts.Quiet {
		return func() {}
	}
	bar := opts.Progress == "on" || (opts.Progress == "auto" && opts.IO.IsStderrTTY())
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if bar {
			drawBar(ctx, opts.IO.ErrOut, c, total)
		} else {
			logLines(ctx, opts.IO.ErrOut, opts.LogEvery, c, total)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func finished(c *batch.Counters) int64 {
	return c.Done.Load() + c.Failed.Load() + c.Skipped.Load() + c.SkippedFailed.Load() + c.Bad.Load()
}

func drawBar(ctx context.Context, w io.Writer, c *batch.Counters, total func() int64) {
	max := total()
	if max == 0 {
		max = -1
	}
	b := progressbar.NewOptions64(max, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString("items"), progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish())
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if max < 0 {
			if n := total(); n > 0 {
				max = n
				b.ChangeMax64(n)
			}
		}
		b.Describe(fmt.Sprintf("failed %d", c.Failed.Load()+c.Bad.Load()))
		_ = b.Set64(finished(c))
		select {
		case <-ctx.Done():
			_ = b.Finish()
			return
		case <-t.C:
		}
	}
}

func logLines(ctx context.Context, w io.Writer, every time.Duration, c *batch.Counters, total func() int64) {
	t := time.NewTicker(every)
	defer t.Stop()
	start, last, lastChange := time.Now(), int64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n := finished(c)
			left := "?"
			if tot := total(); tot > 0 {
				left = fmt.Sprint(max(tot-n, 0))
			}
			fmt.Fprintf(w, "progress: %d finished (%d done, %d failed, %d skipped), %s left, %.1f items/s\n",
				n, c.Done.Load(), c.Failed.Load()+c.Bad.Load(), c.Skipped.Load(), left,
				float64(c.Done.Load()+c.Failed.Load())/now.Sub(start).Seconds())
			if n != last {
				last, lastChange = n, now
			} else if now.Sub(lastChange) >= time.Minute {
				fmt.Fprintf(w, "warning: nothing has finished for %s\n", now.Sub(lastChange).Round(time.Second))
			}
		}
	}
}

func printSummary(w io.Writer, s *batch.Summary, cs llm.Stats) {
	rate := 0.0
	if secs := s.Elapsed.Seconds(); secs > 0 {
		rate = float64(s.Done+s.Failed) / secs
	}
	fmt.Fprintf(w, "llmbatch: %d done, %d failed, %d bad lines, %d skipped (done earlier)", s.Done, s.Failed+s.SkippedFailed, s.Bad, s.Skipped)
	fmt.Fprintf(w, "; %d requests, %d retries, %d rate-limited; %d+%d tokens; %s, %.1f items/s\n",
		cs.Attempts, cs.Retries, cs.RateLimited, s.PromptTokens, s.OutputTokens, s.Elapsed.Round(time.Millisecond), rate)
	fmt.Fprintf(w, "llmbatch: results in %s\n", s.Output)
	if s.Failed+s.SkippedFailed+s.Bad > 0 {
		fmt.Fprintf(w, "llmbatch: errors in %s (rerun with --retry-failed to redo failed items)\n", s.Errors)
	}
}
