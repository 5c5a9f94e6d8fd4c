package batch

import (
	"context"
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
	Bad          int64 // rejected lines, BadEarlier included
	BadEarlier   int64 // rejected lines an earlier run recorded already
	Fixed        int64 // lines an earlier run rejected that read well now: sent, or cleared if done
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

// EstimateRun reads cfg.Input through the run's own reader (the same
// shaping, duplicate check and skipping of what earlier runs finished or
// rejected) and reports what Run would send, with and without merging. It
// takes no lock and writes nothing; the checkpoint, if there is one, is only
// read. Like Run, it reads the input interruptibly: it returns
// ErrInterrupted once Config.Stop is closed and ctx.Err() once ctx ends,
// also while a read waits on a silent pipe, and returns only once the
// goroutine watching them has ended.
func EstimateRun(ctx context.Context, cfg Config) (*Estimate, error) {
	cfg.setDefaults()
	cfg.Counters = &Counters{} // the source counts lines here, apart from any live display
	shaper, err := newShaper(&cfg)
	if err != nil {
		return nil, err
	}
	rec, err := loadRecorded(&cfg)
	if err != nil {
		return nil, err
	}
	in := openInput(cfg.Input)
	defer in.close()
	ctx, end := watchStop(ctx, cfg.Stop, in)
	defer end()
	src := newSource(&cfg, in.r, shaper, rec)
	defer src.close()
	return estimate(ctx, &cfg, src, shaper)
}

// estimate reads every line of src and adds up what a run would send.
func estimate(ctx context.Context, cfg *Config, src *source, shaper *recordShaper) (*Estimate, error) {
	e := &Estimate{Models: map[string]*ModelEstimate{}}
	p := NewPacker(cfg.Packer)
	now := time.Now()
	for {
		it, err := src.next(ctx)
		switch {
		case err == io.EOF:
			e.addGroups(p.Flush(), shaper.tokens)
			e.addLines(cfg.Counters, src.badBefore)
			return e, nil
		case ctx.Err() != nil:
			return nil, context.Cause(ctx) // ErrInterrupted, or ctx's own error
		case err != nil:
			return nil, &SetupError{err}
		}
		if it.fixes > 0 {
			e.Fixed++
		}
		if it.rejected == nil && !it.onlyFix { // else written to the errors file or the checkpoint, never sent
			e.addItem(it)
			e.addGroups(p.Add(it, now), shaper.tokens)
		}
	}
}

// watchStop returns a context that ends with ctx or, with ErrInterrupted
// as its cause, once stop is closed; either ends a read of in that may be
// blocked on a silent pipe (as Run's watch stage does). end releases and
// joins the watching goroutine.
func watchStop(ctx context.Context, stop <-chan struct{}, in *input) (_ context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-stop: // nil: never
			cancel(ErrInterrupted)
		case <-ctx.Done():
		}
		if context.Cause(ctx) != errEnded {
			in.interrupt()
		}
	}()
	return ctx, func() {
		cancel(errEnded)
		<-done
	}
}

// loadRecorded returns what earlier runs recorded as the next run will
// find it once its recovery has run: the journal (nil when there is none
// and no results or errors file either) and the lines of the results and
// errors files that the journal lacks (a run killed after writing them),
// judged by the same reconciler as recovery. It writes nothing.
func loadRecorded(cfg *Config) (recorded, error) {
	snap, err := checkpoint.Load(cfg.Checkpoint)
	p := &pending{extra: map[string]checkpoint.Status{}}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, &SetupError{err}
	default:
		p.snap = snap
		p.done, p.failed, p.bad = snap.Counts()
	}
	// Recovery reads the files after cutting their torn tails: a last line
	// without its newline is not recorded.
	rc := reconciler{status: p.Status, complete: true}
	if err := rc.unrecorded(cfg.Output, cfg.Errors, p.add); err != nil {
		return nil, err
	}
	if p.snap == nil && len(p.extra) == 0 {
		return nil, nil
	}
	return p, nil
}

// pending is a journal's snapshot with the records recovery would add.
// The records added are kept in memory: they are what a kill left
// unjournaled, at most a few commits' worth (or the whole results file if
// its journal was deleted).
type pending struct {
	snap              *checkpoint.Snapshot // nil: no journal yet
	extra             map[string]checkpoint.Status
	done, failed, bad int
}

// Status returns the status of key, the records added first.
func (p *pending) Status(key string) (checkpoint.Status, bool) {
	if st, ok := p.extra[key]; ok {
		return st, true
	}
	if p.snap == nil {
		return 0, false
	}
	return p.snap.Status(key)
}

// Counts returns the records of each status, the records added included.
func (p *pending) Counts() (done, failed, bad int) { return p.done, p.failed, p.bad }

// add records key as st, as the journal's Append does: the last record wins.
func (p *pending) add(key string, st checkpoint.Status) error {
	if old, ok := p.Status(key); ok {
		p.count(old, -1)
	}
	p.extra[key] = st
	p.count(st, 1)
	return nil
}

func (p *pending) count(st checkpoint.Status, d int) {
	switch st {
	case checkpoint.Done:
		p.done += d
	case checkpoint.Failed:
		p.failed += d
	case checkpoint.Bad:
		p.bad += d
	}
}

func (e *Estimate) addGroups(gs [][]*Item, count func(string) int) {
	for _, g := range gs {
		e.MergedRequests++
		if len(g) == 1 {
			e.MergedTokens += int64(g[0].Tokens)
			continue
		}
		e.MergedTokens += int64(mergedTokens(g, count))
	}
}

// addLines takes the counts of lines from the source's counters c.
func (e *Estimate) addLines(c *Counters, badBefore int64) {
	e.Items, e.Bad, e.BadEarlier = c.Read.Load(), c.Bad.Load(), badBefore
	e.DoneEarlier, e.FailedBefore = c.Skipped.Load(), c.SkippedFailed.Load()
}

// addItem counts an item to send, sent alone.
func (e *Estimate) addItem(it *Item) {
	e.ToSend++
	e.Requests++
	e.Tokens += int64(it.Tokens)
	m := e.Models[it.Model]
	if m == nil {
		m = &ModelEstimate{}
		e.Models[it.Model] = m
	}
	m.Items++
	m.Tokens += int64(it.Tokens)
	if it.MaxOutput > 0 && m.MaxOutput >= 0 {
		m.MaxOutput += int64(it.MaxOutput)
	} else {
		m.MaxOutput = -1
	}
}
