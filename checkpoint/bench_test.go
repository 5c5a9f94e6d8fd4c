package checkpoint_test

import (
	"strconv"
	"sync"
	"testing"
)

// benchKeys returns the keys benchmarks append, shaped like the ids of a large job.
var benchKeys = sync.OnceValue(func() []string {
	ks := make([]string, 1<<20)
	for i := range ks {
		ks[i] = "ticket-" + strconv.Itoa(10_000_000+i)
	}
	return ks
})

func BenchmarkAppend(b *testing.B) {
	keys := benchKeys()
	j := open(b, tempPath(b), nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := j.Append(keys[i%len(keys)], done); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if err := j.Sync(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReplay opens a journal of 1,000,000 records; one op is one Open and Close.
func BenchmarkReplay(b *testing.B) {
	const n = 1_000_000
	keys := benchKeys()
	path := tempPath(b)
	j := open(b, path, nil)
	for i := range n {
		st := done
		if i%100 == 0 {
			st = failed
		}
		if err := j.Append(keys[i], st); err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		j := open(b, path, nil)
		if d, f, _ := j.Counts(); d+f != n {
			b.Fatalf("replayed %d records, want %d", d+f, n)
		}
		j.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}
