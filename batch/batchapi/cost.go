package batchapi

// Price is what a model costs, in US dollars per million tokens: the same
// fields as batch.Price, so that one converts to the other (this package
// cannot import batch, which will import it).
type Price struct {
	In, Out float64
}

// DefaultFactor is the share of the online price a Batch API charges when
// nothing else is known: half, as every provider below charges.
const DefaultFactor = 0.5

// factors are the shares of their online prices that the providers with a
// Batch API charge for it, by preset name.
var factors = map[string]float64{
	"openai":    0.5, // Batch API: 50% off input and output
	"dashscope": 0.5, // Qwen batch inference: half price
	"moonshot":  0.5, // the list: half price at each
	"groq":      0.5,
	"together":  0.5,
	"doubao":    0.5, // Volcengine Ark batch inference
	"mock":      0.5,
}

// Factor returns the share of its online price that provider's Batch API
// charges, and whether the provider is known to have one. For an unknown
// provider it returns DefaultFactor and false.
func Factor(provider string) (float64, bool) {
	f, ok := factors[provider]
	if !ok {
		return DefaultFactor, false
	}
	return f, true
}

// AtBatch returns p scaled by factor, the price of the same model through
// a Batch API. A factor that is not in (0, 1] (0, negative, NaN, more than
// the online price) is taken as DefaultFactor.
func (p Price) AtBatch(factor float64) Price {
	if !(factor > 0 && factor <= 1) { // NaN fails both comparisons
		factor = DefaultFactor
	}
	return Price{In: p.In * factor, Out: p.Out * factor}
}

// Cost returns the price of prompt and completion tokens at p, in dollars.
func (p Price) Cost(prompt, completion int64) float64 {
	return (float64(prompt)*p.In + float64(completion)*p.Out) / 1e6
}
