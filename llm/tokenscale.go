package llm

import (
	"math"
	"sync"
)

// tokenScale learns, for each model, how the server counts the prompts the
// client estimates: the prompt tokens its answers' usage says, over the
// estimates of those prompts. A token limit is counted in the server's
// tokens, and an estimate is made with a tokenizer that may not be the
// server's, plus a margin (batch's is 10%): paced by estimates alone, a run
// told the server's true --tpm keeps a tenth to a quarter under it, or goes
// over it when the server's tokenizer counts more. So the limiter is given
// each request's estimate in the server's tokens: its prompt part times
// the scale, its output budget (max_tokens, which servers count as it is)
// as it was.
//
// The scale starts at 1 (the estimate as made, margin and all) and moves
// as answers come: it is the ratio of sums over the answers seen (but a
// twentieth over it when it is under 1: estimates are kept a little over
// the server's count, which the lane's tracking of a window relies on;
// with estimates exact, a window's edge is met a little early), with a
// prior of scalePrior tokens at 1 so that the first short answers do not
// swing it, and the sums halved when they grow past scaleMemory, so that it
// follows a change of prompts. It is held within [scaleMin, scaleMax]: a
// ratio beyond is not a tokenizer's difference but a server whose usage
// means something else. Safe for concurrent use.
type tokenScale struct {
	mu     sync.Mutex
	models map[string]*scaleSums
}

// scaleSums are the estimated and the counted prompt tokens of a model's
// answers.
type scaleSums struct{ estimated, counted float64 }

const (
	scalePrior  = 2000    // tokens of evidence the starting scale of 1 weighs as
	scaleMemory = 200_000 // estimated tokens after which old answers weigh half
	scaleMin    = 0.5
	scaleMax    = 2.0
	scaleOver   = 1.05 // how far over the server's count a lowered estimate is kept
)

// apply returns tokens, an estimate of which output was the answer's budget,
// with its prompt part in the server's tokens; at least 1 when tokens was.
func (s *tokenScale) apply(model string, tokens, output int) int {
	prompt := tokens - max(output, 0)
	if tokens <= 0 || prompt <= 0 {
		return tokens
	}
	f := s.factor(model)
	return max(int(math.Round(f*float64(prompt)))+max(output, 0), 1)
}

// factor is the scale of model now.
func (s *tokenScale) factor(model string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.models[model].scale()
}

// factors returns the scale of every model some answer told usage of.
func (s *tokenScale) factors() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]float64, len(s.models))
	for model, m := range s.models {
		out[model] = m.scale()
	}
	return out
}

// scale is what the sums make the scale: 1 when there are none.
func (m *scaleSums) scale() float64 {
	if m == nil {
		return 1
	}
	f := min(max((m.counted+scalePrior)/(m.estimated+scalePrior), scaleMin), scaleMax)
	if f < 1 {
		f = min(f*scaleOver, 1)
	}
	return f
}

// learn takes in an answer to a request of model whose prompt was
// estimated at estimated tokens and which the server's usage counted as
// counted prompt tokens. An answer that did not say (counted 0) tells
// nothing.
func (s *tokenScale) learn(model string, estimated, counted int) {
	if estimated <= 0 || counted <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.models == nil {
		s.models = make(map[string]*scaleSums)
	}
	m := s.models[model]
	if m == nil {
		m = &scaleSums{}
		s.models[model] = m
	}
	m.estimated += float64(estimated)
	m.counted += float64(counted)
	if m.estimated > scaleMemory {
		m.estimated, m.counted = m.estimated/2, m.counted/2
	}
}
