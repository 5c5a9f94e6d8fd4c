package batch

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm"
)

// outcome is what a worker (or the reader, for a rejected line) hands to the
// writer. Exactly one of resp, err and bad is set.
type outcome struct {
	item     *Item
	resp     *llm.Response
	attempts int
	err      error      // the final error of an item that failed
	bad      *LineError // a rejected input line

	// For an item answered in a merged request:
	output json.RawMessage // its output, as JSON
	merged int             // how many items shared the request
	share  float64         // its share of the request's usage
}

// WriteError is a failure to write the results, errors or checkpoint file:
// the run stops (exit 3) and nothing is recorded as done that is not in the
// results file.
type WriteError struct{ Err error }

// Error names the file and the cause once, with a hint for the usual
// causes: "cannot write out.jsonl: no space left on device (the disk is
// full)".
func (e *WriteError) Error() string {
	if pe, ok := errors.AsType[*fs.PathError](e.Err); ok {
		return "cannot write " + pe.Path + ": " + pe.Err.Error() + writeHint(e.Err)
	}
	return "cannot write: " + e.Err.Error() + writeHint(e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// writeHint says in words what the usual causes of a failed write mean.
func writeHint(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return " (the disk is full)"
	case errors.Is(err, syscall.EFBIG):
		return " (the file size limit was reached: see ulimit -f)"
	case errors.Is(err, syscall.EDQUOT):
		return " (the disk quota is used up)"
	case errors.Is(err, syscall.EROFS):
		return " (the file system is read-only)"
	case errors.Is(err, fs.ErrPermission):
		return " (permission denied)"
	}
	return ""
}

// writer alone owns the results file, the errors file and the journal, so
// the order "results durable, then journal" is kept in one place: a key is
// appended to the journal only after its line has been fsynced.
type writer struct {
	cfg       *Config
	spend     func(asked, answered string, u *usage) // counts the cost of an answer
	j         *checkpoint.Journal
	outLock   *outputLock
	out, errs *appendFile
	pending   []pendingKey

	// Outcomes written but not yet committed: they are counted as done or
	// failed once they are durable, so that a run stopped by a failed write
	// does not report what a rerun will have to redo.
	done, failed int64
}

type pendingKey struct {
	key string
	st  checkpoint.Status
}

// loop writes every outcome until results is closed, committing at least
// every SyncEvery. It returns a *WriteError if a file cannot be written.
func (w *writer) loop(results <-chan outcome) error {
	t := time.NewTicker(w.cfg.SyncEvery)
	defer t.Stop()
	for {
		select {
		case o, ok := <-results:
			if !ok {
				return w.commit()
			}
			if err := w.write(o); err != nil {
				return err
			}
			if len(w.pending) >= 8192 {
				if err := w.commit(); err != nil {
					return err
				}
			}
		case <-t.C:
			if err := w.commit(); err != nil {
				return err
			}
		}
	}
}

func (w *writer) write(o outcome) error {
	c := w.cfg.Counters
	c.outcomes.Add(1)
	if o.item != nil && o.item.fixes > 0 {
		// Recorded with the item's own record, after its line is durable.
		w.pending = append(w.pending, pendingKey{lineKey(o.item.fixes), checkpoint.Fixed})
	}
	switch {
	case o.item != nil && o.item.onlyFix:
		return nil
	case o.bad != nil:
		w.pending = append(w.pending, pendingKey{lineKey(o.bad.Line), checkpoint.Bad})
		return w.errs.writeJSON(badLine(o.bad))
	case o.err != nil:
		w.failed++
		w.pending = append(w.pending, pendingKey{itemKey(o.item.ID), checkpoint.Failed})
		return w.errs.writeJSON(failedLine(o.item, o.err, o.attempts))
	default:
		w.done++
		u := o.usage()
		line, err := resultLine(o, u)
		if err != nil {
			return err
		}
		w.pending = append(w.pending, pendingKey{itemKey(o.item.ID), checkpoint.Done})
		if u != nil {
			c.PromptTokens.Add(int64(u.PromptTokens))
			c.OutputTokens.Add(int64(u.CompletionTokens))
			w.spend(o.item.Model, o.resp.Chat.Model, u)
		}
		return w.out.write(line)
	}
}

// commit makes the results and errors durable, then records their keys.
func (w *writer) commit() error {
	if len(w.pending) == 0 {
		return nil
	}
	if err := w.out.sync(); err != nil {
		return err
	}
	if err := w.errs.sync(); err != nil {
		return err
	}
	for _, p := range w.pending {
		if err := w.j.Append(p.key, p.st); err != nil {
			return &WriteError{err}
		}
	}
	if err := w.j.Sync(); err != nil {
		return &WriteError{err}
	}
	w.pending = w.pending[:0]
	w.cfg.Counters.Done.Add(w.done)
	w.cfg.Counters.Failed.Add(w.failed)
	w.done, w.failed = 0, 0
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

type resultRecord struct {
	ID           string          `json:"id"`
	Output       json.RawMessage `json:"output"`
	Model        string          `json:"model,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        *usage          `json:"usage,omitempty"`
	Attempts     int             `json:"attempts"`
	Merged       int             `json:"merged,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type batchRecord struct {
	ID       string        `json:"id"`
	CustomID string        `json:"custom_id"`
	Response batchResponse `json:"response"`
	Error    *struct{}     `json:"error"`
}

type batchResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

// usage is the item's part of the response's usage: all of it, or its
// share of a merged request's.
func (o *outcome) usage() *usage {
	u := o.resp.Chat.Usage
	if u == nil {
		return nil
	}
	if o.merged == 0 {
		return &usage{u.PromptTokens, u.CompletionTokens}
	}
	return &usage{apportion(u.PromptTokens, o.share), apportion(u.CompletionTokens, o.share)}
}

// resultLine is the results-file line of a success, whose usage is u.
func resultLine(o outcome, u *usage) ([]byte, error) {
	it, r := o.item, o.resp
	if it.Batch {
		// The body is re-encoded, so a pretty-printed answer still takes one line.
		body, err := json.Marshal(r.Chat)
		if err != nil {
			return nil, err
		}
		return json.Marshal(batchRecord{
			ID: "batch_req_" + strconv.FormatUint(hashID(it.ID), 16), CustomID: it.ID,
			Response: batchResponse{StatusCode: r.Status, RequestID: r.RequestID, Body: body},
		})
	}
	rec := resultRecord{ID: it.ID, Output: o.output, Model: r.Chat.Model, FinishReason: r.Chat.Choices[0].FinishReason,
		Usage: u, Attempts: o.attempts, Merged: o.merged}
	if rec.Output == nil {
		text, err := json.Marshal(r.Content())
		if err != nil {
			return nil, err
		}
		rec.Output = text
	}
	return json.Marshal(rec)
}

type errorRecord struct {
	ID       string      `json:"id,omitempty"`
	Line     int         `json:"line"`
	Error    errorDetail `json:"error"`
	Attempts int         `json:"attempts,omitempty"`
}

type errorDetail struct {
	Kind    string `json:"kind"`
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// KindInvalidInput is the errors-file kind of a rejected input line.
const KindInvalidInput = "invalid_input"

func badLine(e *LineError) errorRecord {
	return errorRecord{ID: e.ID, Line: e.Line, Error: errorDetail{Kind: KindInvalidInput, Message: e.Err.Error()}}
}

func failedLine(it *Item, err error, attempts int) errorRecord {
	rec := errorRecord{ID: it.ID, Line: it.Line, Attempts: attempts}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		rec.Error = errorDetail{Kind: ae.Kind.String(), Status: ae.Status, Code: ae.Code, Message: ae.Message}
	} else {
		rec.Error = errorDetail{Kind: "error", Message: err.Error()}
	}
	return rec
}

// appendFile is a results or errors file opened for appending on first use,
// created with mode 0600: it holds prompts and answers.
type appendFile struct {
	path  string
	f     *os.File
	w     *bufio.Writer
	dirty bool
}

func (a *appendFile) write(line []byte) error {
	if a.f == nil {
		f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return &WriteError{err}
		}
		a.f, a.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	a.dirty = true
	if _, err := a.w.Write(line); err != nil {
		return &WriteError{pathErr(a.path, err)}
	}
	if err := a.w.WriteByte('\n'); err != nil {
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

func (a *appendFile) sync() error {
	if !a.dirty {
		return nil
	}
	if err := a.w.Flush(); err != nil {
		return &WriteError{pathErr(a.path, err)}
	}
	if err := a.f.Sync(); err != nil {
		return &WriteError{pathErr(a.path, err)}
	}
	a.dirty = false
	return nil
}

func (a *appendFile) close() error {
	if a.f == nil {
		return nil
	}
	err := a.sync()
	if cerr := a.f.Close(); err == nil && cerr != nil {
		err = &WriteError{cerr}
	}
	a.f = nil
	return err
}

// pathErr returns err naming path once: as it is when it already names it
// (an *fs.PathError from the file), or wrapped with the path.
func pathErr(path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		return err
	}
	return &fs.PathError{Op: "write", Path: path, Err: err}
}
