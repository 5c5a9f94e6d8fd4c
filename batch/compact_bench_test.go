package batch

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// BenchmarkCompactErrors compacts an errors file in which every one of n
// failed items has two lines (it failed again when retried), and reports
// the peak heap the compaction added. Run it with a small GOGC, so that the
// figure is live memory rather than garbage waiting for the collector:
//
//	GOGC=5 go test ./batch -run XXX -bench CompactErrors -benchtime 1x
func BenchmarkCompactErrors(b *testing.B) {
	const n = 300_000
	for range b.N {
		b.StopTimer()
		w := compactJob(b, n)
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := sampleHeap(base.HeapInuse)
		b.StartTimer()
		if err := w.compactErrors(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(stop()-base.HeapInuse)/(1<<20), "peak-MB")
		w.j.Close()
	}
}

// compactJob writes a journal of n failed items and an errors file with
// two lines for each.
func compactJob(b *testing.B, n int) *writer {
	cfg := Config{Output: b.TempDir() + "/out.jsonl"}
	cfg.setDefaults()
	j, err := checkpoint.Open(cfg.Checkpoint, nil)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(cfg.Errors)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	for round := range 2 {
		for i := range n {
			fmt.Fprintf(bw, `{"id":"item-%d","line":%d,"error":{"kind":"bad_request","status":400,"message":"refusal %d: the request was not valid for this model"},"attempts":1}`+"\n", i, i+1, round)
		}
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for i := range n {
		j.Append(itemKey(fmt.Sprint("item-", i)), checkpoint.Failed)
	}
	if err := j.Sync(); err != nil {
		b.Fatal(err)
	}
	return &writer{cfg: &cfg, j: j}
}

// sampleHeap samples HeapInuse every 2ms until the function it returns is
// called, which returns the highest figure seen (at least from).
func sampleHeap(from uint64) func() uint64 {
	peak := from
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			select {
			case <-quit:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}()
	return func() uint64 { close(quit); <-done; return peak }
}
