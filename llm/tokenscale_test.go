package llm

import (
	"math"
	"sync"
	"testing"
)

// TestTokenScale checks the scale a model's answers teach: none taught,
// the estimate as made; a server counting half, about half, the output
// budget left as it is; a first short answer moving it little; a change of
// prompts followed; ratios beyond reason held to the bounds; each model on
// its own.
func TestTokenScale(t *testing.T) {
	var s tokenScale
	if got := s.apply("m", 1000, 200); got != 1000 {
		t.Errorf("nothing learned: %d, want the estimate 1000", got)
	}
	s.learn("m", 100, 50)
	if got := s.apply("m", 1000, 0); got < 970 {
		t.Errorf("after one short answer: %d, want it barely moved from 1000", got)
	}
	for range 200 {
		s.learn("m", 1000, 500)
	}
	if f := s.factor("m"); math.Abs(f-0.5*scaleOver) > 0.02 {
		t.Errorf("after 200 answers counted at half: scale %.3f, want about 0.5 and a twentieth", f)
	}
	if got := s.apply("m", 1200, 200); got < 715 || got > 735 {
		t.Errorf("1200 of which 200 max_tokens: %d, want about 525+200", got)
	}
	if got := s.apply("other", 1000, 0); got != 1000 {
		t.Errorf("another model: %d, want 1000 (nothing learned of it)", got)
	}
	for range 1000 {
		s.learn("m", 1000, 900)
	}
	if f := s.factor("m"); math.Abs(f-0.9*scaleOver) > 0.02 {
		t.Errorf("after the prompts changed to 0.9: scale %.3f, want about 0.945 (old answers forgotten)", f)
	}
	for range 200 {
		s.learn("close", 1000, 980)
	}
	if f := s.factor("close"); f != 1 {
		t.Errorf("a server counting 2%% under the estimates: scale %.3f, want 1 (kept a little over its count)", f)
	}
	for range 200 {
		s.learn("more", 1000, 1300)
	}
	if f := s.factor("more"); math.Abs(f-1.3) > 0.02 {
		t.Errorf("a server counting 30%% over the estimates: scale %.3f, want about 1.3", f)
	}
	for range 500 {
		s.learn("wild", 10, 1000)
	}
	if f := s.factor("wild"); f != scaleMax {
		t.Errorf("usage 100 times the estimate: scale %.3f, want held at %v", f, scaleMax)
	}
	if got := s.apply("m", 5, 5); got != 5 {
		t.Errorf("all output: %d, want 5", got)
	}
	if got := s.apply("m", 0, 0); got != 0 {
		t.Errorf("no estimate: %d, want 0", got)
	}
	before := s.factor("m")
	s.learn("m", 0, 10) // says nothing
	s.learn("m", 10, 0)
	s.learn("m", -10, 10)
	if f := s.factor("m"); f != before {
		t.Errorf("answers with no estimate or no usage moved the scale from %.3f to %.3f", before, f)
	}
}

// TestTokenScaleConcurrent is for the race detector.
func TestTokenScaleConcurrent(t *testing.T) {
	var s tokenScale
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 1000 {
				s.learn("m", 100+i, 90+j%20)
				s.apply("m", 500, 100)
			}
		})
	}
	wg.Wait()
	if f := s.factor("m"); f < 0.8 || f > 1.1 {
		t.Errorf("scale %.3f, want about 0.95", f)
	}
}
