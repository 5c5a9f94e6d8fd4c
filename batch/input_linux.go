package batch

import (
	"os"
	"strconv"
	"syscall"
)

// reopenPolled opens a pipe or terminal f again as a file of its own that
// the runtime polls, or returns nil. Opening /proc/self/fd/N of a pipe gives
// a new open file description of the same pipe, so setting it non-blocking
// leaves f (and the shell's terminal) as they were; O_NONBLOCK keeps the
// open of a FIFO from waiting for a writer.
func reopenPolled(f *os.File) *os.File {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return nil
	}
	nf, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	if !polled(nf) {
		nf.Close()
		return nil
	}
	return nf
}
