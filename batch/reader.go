package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Causes of a rejected input line, matched with errors.Is on a [LineError].
var (
	ErrNotJSON     = errors.New("not a JSON object")
	ErrNoPrompt    = errors.New("no prompt, messages or body")
	ErrDuplicateID = errors.New("duplicate id")
	ErrTooLong     = errors.New("line too long")
	ErrBadID       = errors.New("id must be a non-empty string or an integer")
	ErrNoModel     = errors.New("no model: pass --model or give the record a model")
	ErrTemplate    = errors.New("template failed")
	ErrBadUTF8     = errors.New("not valid UTF-8")
)

// LineError is an input line that was rejected; the job goes on without it.
type LineError struct {
	Line int    // 1-based line number
	ID   string // the record's id, when it could be read
	Err  error  // one of the ErrX causes above, possibly wrapped with detail
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// lineReader returns the lines of a JSONL stream one at a time, of any
// length up to max bytes, without the line ending (LF or CRLF) and without a
// leading UTF-8 byte order mark. It is not safe for concurrent use.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line int
	buf  []byte
	torn bool // the line last returned ended the input without a newline
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next line and its number. A line longer than max is
// skipped without being kept in memory and reported as a *LineError with
// ErrTooLong. At the end of input it returns io.EOF; a last line without a
// newline is still returned.
func (lr *lineReader) next() ([]byte, int, error) {
	if cap(lr.buf) > keepBuf {
		lr.buf = nil // one huge line must not pin its buffer for the rest of the run
	}
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+2 { // +2: the line ending
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(lr.buf) == 0 && !tooLong && len(chunk) == 0:
			return nil, lr.line, io.EOF
		case err != nil && err != io.EOF:
			return nil, lr.line, fmt.Errorf("read input after line %d: %w", lr.line, err)
		}
		lr.line++
		lr.torn = err == io.EOF
		if tooLong {
			return nil, lr.line, &LineError{Line: lr.line, Err: fmt.Errorf("%w: over %d bytes", ErrTooLong, lr.max)}
		}
		b := bytes.TrimRight(lr.buf, "\r\n")
		if lr.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		return b, lr.line, nil
	}
}

// keepBuf is the largest line buffer kept from one line to the next.
const keepBuf = 1 << 20
