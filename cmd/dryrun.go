package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/llmbatch/llmbatch/batch"
	"github.com/llmbatch/llmbatch/llm/pace/shared"
)

// dryRun prints what a run would send, and the least time the limits
// allow, without sending anything or taking any lock.
func dryRun(ctx context.Context, opts *RunOptions, cfg batch.Config, prices priceTable) error {
	if opts.BatchAPI.On {
		return dryRunBatchAPI(ctx, opts, cfg, prices)
	}
	e, err := batch.EstimateRun(ctx, cfg)
	if err != nil {
		return err
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "items:            %d read", e.Items)
	if e.Bad+e.DoneEarlier+e.FailedBefore > 0 {
		fmt.Fprintf(w, " (%d bad lines, %d done earlier, %d failed earlier)", e.Bad, e.DoneEarlier, e.FailedBefore)
	}
	if e.BadEarlier+e.Fixed > 0 {
		fmt.Fprintf(w, "\nrejected earlier: %d bad lines already in the errors file (not written again); %d fixed since (sent, or cleared if done)",
			e.BadEarlier, e.Fixed)
	}
	fmt.Fprintf(w, "\nto send:          %d items\n", e.ToSend)
	fmt.Fprintf(w, "requests:         %d one per item; %d merged (--batch-items %d, --batch-tokens %d)\n",
		e.Requests, e.MergedRequests, opts.BatchItems, opts.BatchTokens)
	fmt.Fprintf(w, "tokens:           ~%d one per item; ~%d merged (prompts plus max_tokens, as --tpm counts them)\n",
		e.Tokens, e.MergedTokens)
	fmt.Fprintf(w, "cost:             %s\n", estimateCost(e, prices))
	if opts.Redis != "" {
		fmt.Fprintf(w, "limits:           shared through %s with the other processes using the key: --rpm/--tpm are the key's, for all of them%s\n",
			shared.MaskURL(opts.Redis), sharedCap(opts))
	}
	if opts.RPM == 0 && opts.TPM == 0 {
		fmt.Fprintln(w, "least time:       no --rpm or --tpm given: bound by the server and -j")
		return nil
	}
	fmt.Fprintf(w, "least time:       %s one per item; %s merged (at --rpm %d, --tpm %d)\n",
		round(batch.Least(e.Requests, e.Tokens, opts.RPM, opts.TPM)),
		round(batch.Least(e.MergedRequests, e.MergedTokens, opts.RPM, opts.TPM)), opts.RPM, opts.TPM)
	return nil
}

func round(d time.Duration) string {
	if d > time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// estimateCost prices the prompts of the items to send (one per item), and
// their answers when max_tokens bounds them. A model without a price makes
// the cost unknown, never 0.
func estimateCost(e *batch.Estimate, prices priceTable) string {
	if e.ToSend == 0 {
		return "$0 (nothing to send)"
	}
	var prompts, answers float64
	bounded := true
	for model, m := range e.Models {
		p, ok := prices.lookup(model)
		if !ok {
			return fmt.Sprintf("unknown: no price for %q (give one with --price %s=IN/OUT)", model, model)
		}
		if m.MaxOutput < 0 {
			bounded = false
			prompts += p.Cost(m.Tokens, 0)
			continue
		}
		prompts += p.Cost(m.Tokens-m.MaxOutput, 0)
		answers += p.Cost(0, m.MaxOutput)
	}
	if !bounded {
		return fmt.Sprintf("~%s for the prompts, plus the answers (no max_tokens to bound them)", money(prompts))
	}
	return fmt.Sprintf("~%s for the prompts, at most %s more for the answers (max_tokens)", money(prompts), money(answers))
}
