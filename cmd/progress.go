package cmd

import (
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

// countLines counts the records of a regular input file in a goroutine
// that wg joins and ctx ends, for the progress total; the returned func
// gives 0 until it is known, and always for stdin or anything but a
// regular file (a named pipe is the run's to read, and opening it would
// block).
func countLines(ctx context.Context, wg *sync.WaitGroup, path string) func() int64 {
	var total atomic.Int64
	if fi, err := os.Stat(path); path == "-" || err != nil || !fi.Mode().IsRegular() {
		return total.Load
	}
	wg.Go(func() { // reads the file once, then ends
		if n, err := countRecords(ctx, path); err == nil {
			total.Store(n)
		}
	})
	return total.Load
}

// startProgress shows the run's progress until the returned func is called:
// a bar when ErrOut is a terminal (or --progress on), otherwise a log line
// every LogEvery, with a warning when nothing has finished for six periods
// (a minute by default). The input is counted for the total only then.
func startProgress(ctx context.Context, opts *RunOptions, c *batch.Counters, stats func() llm.Stats) func() {
	if opts.Progress == "off" || opts.Quiet {
		return func() {}
	}
	bar := opts.Progress == "on" || (opts.Progress == "auto" && opts.IO.IsStderrTTY())
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	p := &progress{c: c, total: countLines(ctx, &wg, opts.Input), stats: stats, start: time.Now()}
	wg.Go(func() {
		if bar {
			p.drawBar(ctx, opts.IO.ErrOut)
		} else {
			p.logLines(ctx, opts.IO.ErrOut, opts.LogEvery)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// progress reads a run's figures for display.
type progress struct {
	c     *batch.Counters
	total func() int64 // 0 while unknown
	stats func() llm.Stats
	start time.Time
}

// figures is one reading of the run.
type figures struct {
	finished, done, failed, skipped, total, left int64 // left: -1 when unknown
	retries, limited                             int64
	rate                                         float64       // items answered a second, this run
	eta                                          time.Duration // 0 when unknown
}

func (p *progress) read(now time.Time) figures {
	c := p.c
	f := figures{done: c.Done.Load(), failed: c.Failed.Load() + c.Bad.Load() + c.SkippedFailed.Load(),
		skipped: c.Skipped.Load(), total: p.total(), left: -1}
	f.finished = f.done + f.failed + f.skipped
	st := p.stats()
	f.retries, f.limited = st.Retries, st.RateLimited
	if secs := now.Sub(p.start).Seconds(); secs > 0 {
		f.rate = float64(c.Done.Load()+c.Failed.Load()) / secs
	}
	if f.total > 0 {
		f.left = max(f.total-f.finished, 0)
		if f.rate > 0 {
			f.eta = time.Duration(float64(f.left) / f.rate * float64(time.Second))
		}
	}
	return f
}

func (p *progress) drawBar(ctx context.Context, w io.Writer) {
	max := p.total()
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
		f := p.read(time.Now())
		if max < 0 && f.total > 0 {
			max = f.total
			b.ChangeMax64(max)
		}
		b.Describe(fmt.Sprintf("failed %d, retries %d, 429s %d", f.failed, f.retries, f.limited))
		_ = b.Set64(f.finished)
		select {
		case <-ctx.Done():
			_ = b.Finish()
			return
		case <-t.C:
		}
	}
}

func (p *progress) logLines(ctx context.Context, w io.Writer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastChange := int64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f := p.read(now)
			left, eta := "?", "?"
			if f.left >= 0 {
				left = fmt.Sprint(f.left)
			}
			if f.eta > 0 {
				eta = f.eta.Round(time.Second).String()
			}
			fmt.Fprintf(w, "progress: %d/%s finished (%d done, %d failed, %d skipped), %s left, %.1f items/s, eta %s, %d retries, %d 429s\n",
				f.finished, totalText(f.total), f.done, f.failed, f.skipped, left, f.rate, eta, f.retries, f.limited)
			if f.finished != last {
				last, lastChange = f.finished, now
			} else if now.Sub(lastChange) >= 6*every { // a minute at the default period

				fmt.Fprintf(w, "warning: nothing has finished for %s (is the server answering? -v shows every retry)\n",
					now.Sub(lastChange).Round(time.Second))
			}
		}
	}
}

func totalText(n int64) string {
	if n <= 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func printSummary(w io.Writer, s *batch.Summary, cs llm.Stats) {
	rate := 0.0
	if secs := s.Elapsed.Seconds(); secs > 0 {
		rate = float64(s.Done+s.Failed) / secs
	}
	fmt.Fprintf(w, "llmbatch: %d done, %d failed, %d bad lines, %d skipped (done earlier)", s.Done, s.Failed+s.SkippedFailed, s.Bad, s.Skipped)
	fmt.Fprintf(w, "; %d requests, %d retries, %d rate-limited; %d+%d tokens; %s, %.1f items/s\n",
		cs.Attempts, cs.Retries, cs.RateLimited, s.PromptTokens, s.OutputTokens, s.Elapsed.Round(time.Millisecond), rate)
	if s.Done > 0 {
		fmt.Fprintf(w, "llmbatch: %s\n", costText(s.Cost, s.CostUnknown))
	}
	fmt.Fprintf(w, "llmbatch: results in %s\n", s.Output)
	switch failed := s.Failed + s.SkippedFailed; {
	case failed > 0 && s.Bad > 0:
		fmt.Fprintf(w, "llmbatch: errors in %s: rerun with --retry-failed to redo the failed items; fix the rejected lines in the input\n", s.Errors)
	case failed > 0:
		fmt.Fprintf(w, "llmbatch: errors in %s: rerun with --retry-failed to redo the failed items\n", s.Errors)
	case s.Bad > 0:
		fmt.Fprintf(w, "llmbatch: errors in %s: fix the rejected lines in the input, then rerun\n", s.Errors)
	}
}
