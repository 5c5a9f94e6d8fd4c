package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm"
)

// outcome is what a worker (or the reader, for a rejected line) hands to the
// writer. Exactly one of resp, err and bad is set.
type outcome struct {
	item     *Item
	resp     *llm.Response
	attempts int
	err      error           // the final error of an item that failed
	bad      *LineError      // a rejected input line
	ack      chan<- struct{} // told once the outcome is written (or held); nil: nobody waits

	// For an item answered in a merged request:
	output json.RawMessage // its output, as JSON
	merged int             // how many items shared the request
	share  float64         // its share of the request's usage
}

// writer alone owns the results file, the errors file and the journal, so
// the order of writing, syncing and recording is decided in one place. It
// is two goroutines: the line writer hands each outcome's line to the OS as
// it arrives (a kill of the process then loses only the requests in
// flight), and the committer, beside it, fsyncs what was written and then
// records its keys in the journal (a group commit): a key reaches the
// journal only after its line has been fsynced, and a line written but not
// yet recorded is recorded by the next run's recovery, which reads the
// results file (see openWriter).
type writer struct {
	cfg       *Config
	spend     func(asked, answered string, u *usage) // counts the cost of an answer
	stopped   func() bool                            // whether a stop drained the run
	provenUp  func(*Item) bool                       // whether the server answered after the item was sent
	j         *checkpoint.Journal                    // the committer's
	outLock   *outputLock
	out, errs *appendFile

	// The line writer's: what was written and not yet handed to the
	// committer, and the failures held back until the server proves up.
	batch commitBatch
	held  heldFailures
	acks  []chan<- struct{} // the workers whose outcomes are being written
}

// commitBatch is the work of one group commit: outcomes written to the
// files, whose keys are recorded once the files are fsynced.
type commitBatch struct {
	keys         []pendingKey
	out, errs    bool  // lines were written to the results, errors file
	done, failed int64 // outcomes answered and failed: counted once durable
}

type pendingKey struct {
	key string
	st  checkpoint.Status
}

// maxBatch is how many keys the line writer gathers before it waits for
// the committer.
const maxBatch = 8192

// run is the writer stage: it writes every outcome until results is
// closed, committing at least every SyncEvery, and at the end. It returns a
// *WriteError if a file cannot be written.
func (w *writer) run(results <-chan outcome) error {
	commits := make(chan commitBatch) // unbuffered: a batch is handed over only when the committer is idle
	g, ctx := errgroup.WithContext(context.Background())
	g.Go(func() error {
		for b := range commits {
			if err := w.commit(b); err != nil {
				return err
			}
		}
		return nil
	})
	g.Go(func() error {
		defer close(commits)
		return w.writeLines(ctx, results, commits)
	})
	return g.Wait()
}

// writeLines is the line writer. ctx ends when the committer failed.
func (w *writer) writeLines(ctx context.Context, results <-chan outcome, commits chan<- commitBatch) error {
	t := time.NewTicker(w.cfg.SyncEvery)
	defer t.Stop()
	for {
		select {
		case o, open := <-results:
			var err error
			if open {
				open, err = w.takeSome(o, results)
			}
			if err == nil && !open {
				return w.finish(ctx, commits)
			}
			switch {
			case err != nil:
				return err
			case open && len(w.batch.keys) < maxBatch:
				continue
			}
			w.handOff(ctx, commits, true)
		case <-t.C:
			w.handOff(ctx, commits, false)
		case <-ctx.Done():
			return nil // the committer's error is the stage's
		}
	}
}

// finish settles the failures held at the end and hands the last batch to
// the committer, also when settleHeld stops the run (what it wrote is
// committed all the same).
func (w *writer) finish(ctx context.Context, commits chan<- commitBatch) error {
	err := w.settleHeld()
	if err == nil || errors.As(err, new(*StopError)) {
		w.handOff(ctx, commits, true)
	}
	return err
}

// takeSome takes o and the outcomes already waiting behind it, hands their
// lines to the OS (one write a file), and only then lets their workers go
// on. ok is false once results is closed.
func (w *writer) takeSome(o outcome, results <-chan outcome) (ok bool, err error) {
	acks := w.acks[:0]
	for ok = true; ok && len(acks) < maxGather; {
		if err := w.take(o); err != nil {
			return ok, err
		}
		if o.ack != nil {
			acks = append(acks, o.ack)
		}
		select {
		case o, ok = <-results:
			continue
		default:
		}
		break
	}
	if err := w.flush(); err != nil {
		return ok, err
	}
	for _, a := range acks {
		a <- struct{}{} // buffered: its worker waits for it
	}
	w.acks = acks[:0]
	return ok, nil
}

// maxGather is how many outcomes the line writer takes before it writes.
const maxGather = 256

// flush hands the lines buffered for both files to the OS.
func (w *writer) flush() error {
	if err := w.out.flush(); err != nil {
		return err
	}
	return w.errs.flush()
}

// handOff gives the batch written so far to the committer: when it is
// idle, or, with wait, as soon as it is.
func (w *writer) handOff(ctx context.Context, commits chan<- commitBatch, wait bool) {
	if len(w.batch.keys) == 0 {
		return
	}
	if wait {
		select {
		case commits <- w.batch:
		case <-ctx.Done():
			return
		}
	} else {
		select {
		case commits <- w.batch:
		default:
			return // a commit is under way: the next tick takes both
		}
	}
	w.batch = commitBatch{}
}

// take writes an outcome, or holds back a failure that an outage may
// explain (see heldFailures). An answer proves the server up: the failures
// held before it were the items' own.
func (w *writer) take(o outcome) error {
	switch {
	case o.err != nil && transient(o.err):
		if old, full := w.held.add(o); full {
			return w.write(old)
		}
		return nil
	case o.resp != nil:
		for _, h := range w.held.take() {
			if err := w.write(h); err != nil {
				return err
			}
		}
	}
	return w.write(o)
}

// settleHeld decides the failures still held when results is closed: a
// run that stopped leaves them to the rerun (the server may be down, and
// the item not at fault); a run that ended normally records those the
// server answered requests after, and leaves the others to the rerun with
// a *StopError wrapping ErrServerDown (see heldFailures).
func (w *writer) settleHeld() error {
	held := w.held.take()
	if len(held) > 0 && w.stopped() {
		w.cfg.Logger.Info("items whose attempts ran out while no request succeeded are left for the rerun", "items", len(held))
		return nil
	}
	var left []outcome
	for _, h := range held {
		if !w.provenUp(h.item) {
			left = append(left, h)
			continue
		}
		if err := w.write(h); err != nil {
			return err
		}
	}
	if err := w.flush(); err != nil || len(left) == 0 {
		return err
	}
	return &StopError{fmt.Errorf("%w (%d items; the last error: %w)", ErrServerDown, len(left), left[len(left)-1].err)}
}

// write writes an outcome's line to the OS and adds its keys to the batch.
func (w *writer) write(o outcome) error {
	c, b := w.cfg.Counters, &w.batch
	c.outcomes.Add(1)
	if o.item != nil && o.item.fixes > 0 {
		// Recorded with the item's own record, after its line is durable.
		b.keys = append(b.keys, pendingKey{lineKey(o.item.fixes), checkpoint.Fixed})
	}
	switch {
	case o.item != nil && o.item.onlyFix:
		return nil
	case o.bad != nil:
		b.keys, b.errs = append(b.keys, pendingKey{lineKey(o.bad.Line), checkpoint.Bad}), true
		return w.errs.writeJSON(badLine(o.bad))
	case o.err != nil:
		b.failed++
		b.keys, b.errs = append(b.keys, pendingKey{itemKey(o.item.ID), checkpoint.Failed}), true
		return w.errs.writeJSON(failedLine(o.item, o.err, o.attempts))
	}
	u := o.usage()
	line, err := resultLine(o, u)
	if err != nil {
		return err
	}
	b.done++
	b.keys, b.out = append(b.keys, pendingKey{itemKey(o.item.ID), checkpoint.Done}), true
	if u != nil {
		c.PromptTokens.Add(int64(u.PromptTokens))
		c.OutputTokens.Add(int64(u.CompletionTokens))
		w.spend(o.item.Model, o.resp.Chat.Model, u)
	}
	return w.out.write(line)
}

// commit makes the files b wrote to durable, then records b's keys. It is
// the committer's, run beside the line writer.
func (w *writer) commit(b commitBatch) error {
	if b.out {
		if err := w.out.sync(); err != nil {
			return err
		}
	}
	if b.errs {
		if err := w.errs.sync(); err != nil {
			return err
		}
	}
	for _, p := range b.keys {
		if err := w.j.Append(p.key, p.st); err != nil {
			return &WriteError{err}
		}
	}
	if err := w.j.Sync(); err != nil {
		return &WriteError{err}
	}
	w.cfg.Counters.Done.Add(b.done)
	w.cfg.Counters.Failed.Add(b.failed)
	return nil
}

// close makes everything durable and releases the journal. It compacts the
// errors file only when writing went well.
func (w *writer) close(ok bool) error {
	err := errors.Join(w.out.close(), w.errs.close())
	if ok && err == nil {
		err = w.compactErrors()
	}
	if cerr := w.j.Close(); cerr != nil {
		err = errors.Join(err, &WriteError{cerr})
	}
	w.outLock.Close()
	return err
}

// appendFile is a results or errors file opened for appending on first use,
// created with mode 0600: it holds prompts and answers. The line writer
// alone calls write; the committer calls sync on a file written before
// (os.File is safe for that); close comes after both.
type appendFile struct {
	path string
	f    *os.File
	buf  []byte // lines not yet handed to the OS: the line writer's
}

// write buffers line and a newline, opening the file on first use.
func (a *appendFile) write(line []byte) error {
	if a.f == nil {
		f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return &WriteError{err}
		}
		a.f = f
	}
	a.buf = append(append(a.buf, line...), '\n')
	return nil
}

// keepBuf is the largest write buffer kept from one flush to the next.
const keepBuf = 1 << 20

// flush hands the lines buffered to the OS in one write: a kill of the
// process cannot lose them after that, only a crash of the machine before
// sync.
func (a *appendFile) flush() error {
	if len(a.buf) == 0 {
		return nil
	}
	_, err := a.f.Write(a.buf)
	a.buf = a.buf[:0]
	if cap(a.buf) > keepBuf {
		a.buf = nil // one huge line must not pin its buffer for the rest of the run
	}
	if err != nil {
		return &WriteError{pathErr(a.path, err)}
	}
	return nil
}

func (a *appendFile) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.write(b)
}

// sync fsyncs what was written.
func (a *appendFile) sync() error {
	if a.f == nil {
		return nil
	}
	if err := a.f.Sync(); err != nil {
		return &WriteError{pathErr(a.path, err)}
	}
	return nil
}

func (a *appendFile) close() error {
	if a.f == nil {
		return nil
	}
	err := a.flush()
	if err == nil {
		err = a.sync()
	}
	if cerr := a.f.Close(); err == nil && cerr != nil {
		err = &WriteError{cerr}
	}
	a.f = nil
	return err
}
