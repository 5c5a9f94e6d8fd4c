package batchapi

import (
	"fmt"
	"testing"
)

// BenchmarkPlanner plans shards of typical requests (about 330 bytes) into
// files, fsyncs included: one op is one line.
func BenchmarkPlanner(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You label support tickets."},` +
		`{"role":"user","content":"Ticket 123: the invoice I got for November lists two seats, we have one. Please fix."}],"max_tokens":50}`)
	p := NewPlanner(PlanConfig{Dir: b.TempDir()})
	defer p.Close()
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = fmt.Sprintf("ticket-%07d", i)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body) + 90))
	for i := 0; b.Loop(); i++ {
		if _, err := p.Add(Line{ID: ids[i%len(ids)] + fmt.Sprint(i/len(ids)), Body: body, Tokens: 40}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := p.Flush(); err != nil {
		b.Fatal(err)
	}
}
