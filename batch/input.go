package batch

import (
	"io"
	"os"
	"time"
)

// input is the run's input made interruptible: interrupt ends a read that is
// blocked on a silent pipe or terminal, so that the reader stage ends with
// the run instead of outliving it.
//
// Go can end a blocked read only of a file the runtime polls: a pipe or
// terminal opened by os.Open or os.Pipe, a network connection. os.Stdin is
// not one of those when it was handed over in blocking mode (it usually
// is): there Close does not end a read under way. On Linux such a pipe or
// terminal is opened again through /proc/self/fd, which gives a file of its
// own, in non-blocking mode, that the runtime polls (the shell's copy keeps
// its mode). Elsewhere, or if that fails, a read of a silent, blocking
// stdin holds Run until a line or the end of the input comes: the one
// exception.
type input struct {
	r         io.Reader
	interrupt func()       // ends a blocked read; safe to call at any time, more than once
	close     func() error // closes what openInput opened
}

// openInput wraps r; see [Config.Input] for what the run may do to it.
func openInput(r io.Reader) *input {
	in := &input{r: r, interrupt: func() {}, close: func() error { return nil }}
	switch v := r.(type) {
	case *os.File:
		if polled(v) {
			in.interrupt = func() { v.SetReadDeadline(time.Unix(1, 0)) }
		} else if f := reopenPolled(v); f != nil {
			in.r, in.close = f, f.Close
			in.interrupt = func() { f.SetReadDeadline(time.Unix(1, 0)) }
		}
		// A regular file is never blocked for long: nothing to do.
	case interface{ SetReadDeadline(time.Time) error }:
		in.interrupt = func() { v.SetReadDeadline(time.Unix(1, 0)) }
	case io.Closer:
		in.interrupt = func() { v.Close() }
	}
	return in
}

// polled reports whether reads of f can be ended by a deadline.
func polled(f *os.File) bool { return f.SetReadDeadline(time.Time{}) == nil }
