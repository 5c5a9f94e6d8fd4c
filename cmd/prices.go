package cmd

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbatch/llmbatch/batch"
)

// defaultPrices are list prices in US dollars per million tokens (input,
// output) of the presets' common models, as published in 2025. They change:
// give your own with --price MODEL=IN/OUT (or price = [...] in the config).
// A model without a price has an unknown cost, never a cost of 0.
var defaultPrices = map[string]batch.Price{
	"gpt-4o-mini":       {In: 0.15, Out: 0.60},
	"gpt-4o":            {In: 2.50, Out: 10.00},
	"gpt-4.1":           {In: 2.00, Out: 8.00},
	"gpt-4.1-mini":      {In: 0.40, Out: 1.60},
	"gpt-4.1-nano":      {In: 0.10, Out: 0.40},
	"deepseek-chat":     {In: 0.28, Out: 0.42},
	"deepseek-reasoner": {In: 0.28, Out: 0.42},
	"mock-1":            {In: 0, Out: 0},
}

// priceTable finds a model's price: exactly, or by the longest known
// prefix ("gpt-4o-mini-2024-07-18" is priced as "gpt-4o-mini").
type priceTable struct {
	prices map[string]batch.Price
	byLen  []string // the models, longest first
}

func newPriceTable(flags []string) (priceTable, error) {
	prices := maps.Clone(defaultPrices)
	for _, f := range flags {
		model, spec, ok := strings.Cut(f, "=")
		in, out, ok2 := strings.Cut(spec, "/")
		pin, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		pout, err2 := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if !ok || !ok2 || model == "" || err1 != nil || err2 != nil || pin < 0 || pout < 0 {
			return priceTable{}, usageErr("--price %q: want MODEL=INPUT/OUTPUT in dollars per million tokens, e.g. gpt-4o-mini=0.15/0.60", f)
		}
		prices[strings.TrimSpace(model)] = batch.Price{In: pin, Out: pout}
	}
	byLen := slices.SortedFunc(maps.Keys(prices), func(a, b string) int { return len(b) - len(a) })
	return priceTable{prices: prices, byLen: byLen}, nil
}

// lookup is called for every answer.
func (t priceTable) lookup(model string) (batch.Price, bool) {
	if p, ok := t.prices[model]; ok {
		return p, true
	}
	for _, k := range t.byLen {
		if strings.HasPrefix(model, k+"-") {
			return t.prices[k], true
		}
	}
	return batch.Price{}, false
}

// money shows dollars with enough digits for small sums.
func money(x float64) string {
	if x > 0 && x < 0.01 {
		return fmt.Sprintf("$%.6f", x)
	}
	return fmt.Sprintf("$%.2f", x)
}

// costText shows dollars, or says the cost is unknown (or a floor) when
// some answers came from a model without a price.
func costText(dollars float64, unknown int64) string {
	switch {
	case unknown > 0 && dollars == 0:
		return "cost unknown (no price for the model: give one with --price)"
	case unknown > 0:
		return fmt.Sprintf("cost at least %s (%d answers from models without a price)", money(dollars), unknown)
	}
	return "cost " + money(dollars)
}

// scaled returns the table with every price times f: the prices of a
// Batch API that charges that share.
func (t priceTable) scaled(f float64) priceTable {
	s := priceTable{prices: make(map[string]batch.Price, len(t.prices)), byLen: t.byLen}
	for k, p := range t.prices {
		s.prices[k] = batch.Price{In: p.In * f, Out: p.Out * f}
	}
	return s
}
