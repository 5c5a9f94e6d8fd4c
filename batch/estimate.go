package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// Estimate is what a run of the input would send, worked out without
// sending anything (--dry-run).
type Estimate struct {
	Items        int64 // records read
	Bad          int64 // rejected lines
	DoneEarlier  int64 // items with a result already
	FailedBefore int64 // items recorded as failed and not to be retried
	ToSend       int64 // items a run would send

	Requests       int64                     // requests without merging: one an item
	Tokens         int64                     // estimated tokens without merging: prompts plus max_tokens, as --tpm counts them
	MergedRequests int64                     // requests with --merge at the configured caps
	MergedTokens   int64                     // the same with --merge
	Models         map[string]*ModelEstimate // the items to send, by model
}

// ModelEstimate is the part of an Estimate that goes to one model.
type ModelEstimate struct {
	Items     int64
	Tokens    int64 // prompts plus max_tokens
	MaxOutput int64 // max_tokens summed; -1 when some item has none
}

// Least returns the least wall time the rpm and tpm limits allow for
// requests carrying tokens; 0 when there is no limit.
func Least(requests, tokens int64, rpm, tpm int) time.Duration {
	var d time.Duration
	if rpm > 0 {
		d = time.Duration(float64(requests) / float64(rpm) * float64(time.Minute))
	}
	if tpm > 0 {
		d = max(d, time.Duration(float64(tokens)/float64(tpm)*float64(time.Minute)))
	}
	return d
}

// EstimateRun reads cfg.Input as Run would and reports what Run would send,
// with and without merging. It takes no lock and writes nothing; the
// checkpoint, if there is one, is only read.
func EstimateRun(ctx context.Context, cfg Config) (*Estimate, error) {
	cfg.setDefaults()
	shaper, err := newShaper(&cfg)
	if err != nil {
		return nil, err
	}
	snap, err := checkpoint.Load(cfg.Checkpoint)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &SetupError{err}
	}
	e := &Estimate{Models: map[string]*ModelEstimate{}}
	p := NewPacker(cfg.Packer)
	now := time.Now()
	lr := newLineReader(cfg.Input, cfg.MaxLineBytes)
	seen := newIDSet()
	defer seen.close()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, _, err := lr.next()
		var le *LineError
		switch {
		case err == io.EOF:
			e.addGroups(p.Flush())
			return e, nil
		case errors.As(err, &le):
			e.Items++
			e.Bad++
			continue
		case err != nil:
			return nil, &SetupError{err}
		case len(trimSpace(line)) == 0:
			continue
		}
		e.Items++
		it, _, err := shaper.shape(line)
		fresh := false
		if err == nil {
			if fresh, err = seen.add(it.ID); err != nil {
				return nil, &SetupError{err}
			}
		}
		if !fresh {
			e.Bad++
			continue
		}
		if snap != nil {
			if st, ok := snap.Status(itemKey(it.ID)); ok && st == checkpoint.Done {
				e.DoneEarlier++
				continue
			} else if ok && st == checkpoint.Failed && !cfg.RetryFailed {
				e.FailedBefore++
				continue
			}
		}
		e.ToSend++
		e.Requests++
		e.Tokens += int64(it.Tokens)
		e.addModel(it)
		e.addGroups(p.Add(it, now))
	}
}

func (e *Estimate) addGroups(gs [][]*Item) {
	for _, g := range gs {
		e.MergedRequests++
		if len(g) == 1 {
			e.MergedTokens += int64(g[0].Tokens)
			continue
		}
		e.MergedTokens += int64(mergedTokens(g))
	}
}

// maxTokensOf returns the max_tokens (or max_completion_tokens) of a
// request body, 0 when it has none.
func maxTokensOf(body []byte) int {
	var b struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
	}
	_ = json.Unmarshal(body, &b)
	return max(b.MaxTokens, b.MaxCompletionTokens)
}

func (e *Estimate) addModel(it *Item) {
	m := e.Models[it.Model]
	if m == nil {
		m = &ModelEstimate{}
		e.Models[it.Model] = m
	}
	m.Items++
	m.Tokens += int64(it.Tokens)
	if mt := maxTokensOf(it.Body); mt > 0 && m.MaxOutput >= 0 {
		m.MaxOutput += int64(mt)
	} else {
		m.MaxOutput = -1
	}
}
