package batchapi

import (
	"fmt"
	"math"
	"testing"
)

func TestAtBatch(t *testing.T) {
	online := Price{In: 0.15, Out: 0.60}
	tests := []struct {
		factor float64
		want   Price
	}{
		{0.5, Price{0.075, 0.30}},
		{1, online},
		{0.25, Price{0.0375, 0.15}},
		{0, Price{0.075, 0.30}},
		{-1, Price{0.075, 0.30}},
		{1.5, Price{0.075, 0.30}},
		{math.NaN(), Price{0.075, 0.30}},
		{math.Inf(1), Price{0.075, 0.30}},
	}
	for _, tt := range tests {
		got := online.AtBatch(tt.factor)
		if math.Abs(got.In-tt.want.In) > 1e-12 || math.Abs(got.Out-tt.want.Out) > 1e-12 {
			t.Errorf("%v.AtBatch(%v) = %v, want %v", online, tt.factor, got, tt.want)
		}
	}
}

func TestFactor(t *testing.T) {
	for _, p := range []string{"openai", "dashscope", "moonshot", "groq", "together", "doubao", "mock"} {
		if f, ok := Factor(p); !ok || f != 0.5 {
			t.Errorf("Factor(%q) = %v, %v; want 0.5, true", p, f, ok)
		}
	}
	if f, ok := Factor("ollama"); ok || f != DefaultFactor {
		t.Errorf("Factor(ollama) = %v, %v; want the default and false", f, ok)
	}
}

// The cost of a shard of a million prompt tokens and 200,000 completion
// tokens on gpt-4o-mini, online and through OpenAI's Batch API.
func ExamplePrice_AtBatch() {
	online := Price{In: 0.15, Out: 0.60} // cmd's list price, dollars per million tokens
	f, _ := Factor("openai")
	fmt.Printf("online $%.4f, batch $%.4f\n", online.Cost(1_000_000, 200_000), online.AtBatch(f).Cost(1_000_000, 200_000))
	// Output: online $0.2700, batch $0.1350
}
