// Package jsonl reads JSON Lines files a line at a time: the one line reader
// of the input (batch), the journal (checkpoint) and the files status counts
// (cmd). It imports the standard library only.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// A Reader reads the lines of a stream one at a time, like a
// [bufio.Scanner] but without its 64 KiB limit: a line may be as long as
// memory allows, or as MaxLine allows when one is set, and a line over the
// limit is skipped without being held in memory, reported by
// [Reader.TooLong], and reading goes on. Lines lose their ending (LF or
// CRLF), and the first line a leading UTF-8 byte order mark. A last line
// without a newline is still a line ([Reader.Complete] says which).
//
// A Reader is not safe for concurrent use. It does not watch a context: a
// caller checks its own between lines (a Read blocked on a silent pipe could
// not be interrupted from here anyway).
//
// # Use
//
//	lr := jsonl.NewReader(f, 64<<20)
//	for lr.Next() {
//		if lr.TooLong() {
//			// line lr.Line() is over the limit
//			continue
//		}
//		use(lr.Line(), lr.Bytes())
//	}
//	if err := lr.Err(); err != nil {
//		// the stream could not be read to its end
//	}
type Reader struct {
	r        *bufio.Reader
	max      int    // longest line kept, without its ending; 0 for no limit
	buf      []byte // the line being read, when longer than r's buffer
	line     []byte // the line last read, without its ending
	n        int    // its number, from 1
	off      int64  // bytes consumed: the offset of the next line
	complete bool   // it ended with a newline
	tooLong  bool   // it was over max and was skipped
	err      error  // the first read error other than io.EOF
}

// keepBuf is the largest line buffer kept from one line to the next: one
// huge line must not pin its memory for the rest of the stream.
const keepBuf = 1 << 20

// NewReader returns a Reader of r that skips lines longer than maxLine bytes
// (without their ending); maxLine <= 0 sets no limit.
func NewReader(r io.Reader, maxLine int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max(maxLine, 0)}
}

// Next reads the next line and reports whether there was one. It returns
// false at the end of the stream and when it cannot be read; [Reader.Err]
// tells the two apart.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	if cap(r.buf) > keepBuf {
		r.buf = nil
	}
	r.line, r.buf, r.tooLong = nil, r.buf[:0], false
	var chunk []byte
	var err error
	for {
		chunk, err = r.r.ReadSlice('\n')
		r.off += int64(len(chunk))
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		r.keep(chunk)
	}
	switch {
	case err != nil && err != io.EOF:
		r.err = err
		return false
	case err == io.EOF && len(chunk) == 0 && len(r.buf) == 0 && !r.tooLong:
		return false
	}
	r.n++
	r.complete = err == nil
	line := chunk
	if len(r.buf) > 0 || r.tooLong {
		r.keep(chunk)
		line = r.buf
	}
	r.setLine(line)
	return true
}

// keep appends chunk to the line being read, unless that makes it too long.
func (r *Reader) keep(chunk []byte) {
	if r.tooLong {
		return
	}
	if r.max > 0 && len(r.buf)+len(chunk) > r.max+2 { // +2: room for the CRLF
		r.tooLong, r.buf = true, r.buf[:0]
		return
	}
	r.buf = append(r.buf, chunk...)
}

// setLine strips the line's ending and, on line 1, its byte order mark.
func (r *Reader) setLine(b []byte) {
	if r.tooLong {
		return
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if r.n == 1 {
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	}
	if r.max > 0 && len(b) > r.max {
		r.tooLong = true
		return
	}
	r.line = b
}

// Bytes returns the line last read, without its ending; nil for a line that
// was too long. It is valid until the next call of Next.
func (r *Reader) Bytes() []byte { return r.line }

// Line returns the number of the line last read, counting from 1, blank and
// skipped lines included.
func (r *Reader) Line() int { return r.n }

// Complete reports whether the line last read ended with a newline. Only
// the last line of a stream can lack one: it was cut short, or is still
// being written.
func (r *Reader) Complete() bool { return r.complete }

// TooLong reports whether the line last read was longer than the limit
// given to [NewReader]: it was skipped, and Bytes returns nil.
func (r *Reader) TooLong() bool { return r.tooLong }

// Offset returns how many bytes of the stream have been consumed: the
// offset just past the line last read, where the next one starts.
func (r *Reader) Offset() int64 { return r.off }

// Err returns the first error met reading the stream; nil when Next
// returned false at its end.
func (r *Reader) Err() error { return r.err }
