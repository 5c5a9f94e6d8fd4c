package batch

import (
	"fmt"
	"testing"
)

// TestIDSetSpills checks duplicates are found whether the first sighting is
// still in memory, in a spilled run, or in a merged run.
func TestIDSetSpills(t *testing.T) {
	s := newIDSet()
	s.memCap = 100              // spill every 100 ids
	s.bloom = newBloom(64 * 64) // room for a few hundred ids: it must grow on the way
	defer s.close()
	const n = 3000
	for i := range n {
		if fresh, err := s.add(fmt.Sprintf("id-%d", i)); !fresh || err != nil {
			t.Fatalf("add(id-%d) = %v, %v the first time", i, fresh, err)
		}
	}
	if len(s.runs) == 0 || s.noDisk {
		t.Fatalf("no spill happened: %d runs, noDisk %v", len(s.runs), s.noDisk)
	}
	if got := len(s.bloom.bits) * 64; got <= 64*64 || int64(got) < s.spilled*bitsPerID {
		t.Errorf("the filter has %d bits for %d ids: it did not grow", got, s.spilled)
	}
	// 30 spills of 100 make runs of sizes like a binary counter's digits.
	if len(s.runs) > 6 {
		t.Errorf("%d runs after 30 spills, want merges to keep about log2(30)", len(s.runs))
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
