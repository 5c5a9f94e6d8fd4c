package batch

import (
	"fmt"
	"testing"
)

// TestIDSetSpills checks duplicates are found whether the first sighting is
// still in memory, in a spilled run, or in a merged run.
func TestIDSetSpills(t *testing.T) {
	s := newIDSet()
	s.memCap = 100 // spill every 100 ids, merge every 5 spills
	defer s.close()
	const n = 3000
	for i := range n {
		if fresh, err := s.add(fmt.Sprintf("id-%d", i)); !fresh || err != nil {
			t.Fatalf("add(id-%d) = %v, %v the first time", i, fresh, err)
		}
	}
	if len(s.runs) == 0 || s.bloom == nil || s.noDisk {
		t.Fatalf("no spill happened: %d runs, noDisk %v", len(s.runs), s.noDisk)
	}
	if len(s.runs) > maxRuns {
		t.Errorf("%d runs, want merges to keep them at most %d", len(s.runs), maxRuns)
	}
	for _, i := range []int{0, 1, 99, 100, 1234, 2999} {
		if fresh, err := s.add(fmt.Sprintf("id-%d", i)); fresh || err != nil {
			t.Errorf("add(id-%d) = %v, %v the second time: a duplicate was missed", i, fresh, err)
		}
	}
	for i := n; i < n+500; i++ {
		if fresh, err := s.add(fmt.Sprintf("id-%d", i)); !fresh || err != nil {
			t.Errorf("add(id-%d) = %v, %v for a new id", i, fresh, err)
		}
	}
}

func BenchmarkIDSet(b *testing.B) {
	s := newIDSet()
	defer s.close()
	for i := 0; b.Loop(); i++ {
		s.add(fmt.Sprintf("item-%d", i))
	}
}
