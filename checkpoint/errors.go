package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/llmbatch/llmbatch/internal/textclip"
)

// ErrLocked is matched (with errors.Is) by the error [Open] returns when another process, or another open
// Journal in this process, holds the journal's lock.
var ErrLocked = errors.New("checkpoint: journal is locked")

// A LockedError is returned by [Open] when the journal at Path is locked by someone else: most likely another
// llmbatch run writing the same output. errors.Is(err, ErrLocked) reports true for it.
type LockedError struct {
	Path string // the journal file
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("checkpoint: %s is locked by another process (is another run writing the same output?)", e.Path)
}

// Is reports whether target is [ErrLocked].
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// A SettingDiff is one answer-shaping setting whose value differs between a journal and an [Open] call.
// A key absent on one side shows as "" on that side.
type SettingDiff struct {
	Key string // the setting's name, e.g. "model"
	Old string // the value recorded in the journal
	New string // the value passed to Open
}

// A MismatchError is returned by [Open] when the journal at Path was written with other settings: resuming
// would mix answers to two different questions in one output. Diff is sorted by Key.
type MismatchError struct {
	Path string
	Diff []SettingDiff
}

// Error names every differing key with both values, each cut to about 60 characters.
func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint: %s was written with different settings:", e.Path)
	for i, d := range e.Diff {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %s was %s, now %s", d.Key, clip(d.Old), clip(d.New))
	}
	b.WriteString(" (rerun with the same settings, or write to another output or checkpoint)")
	return b.String()
}

// clipRunes is how much of a setting's value an error shows: prompts can be pages long.
const clipRunes = 60

// clip quotes s, showing at most clipRunes runes of it.
func clip(s string) string {
	p, cut := textclip.RunePrefix(s, clipRunes)
	if cut {
		return strconv.Quote(p) + textclip.Mark
	}
	return strconv.Quote(p)
}

// A CorruptError is returned by [Open] and [Load] when the header cannot be read, or a line cannot be read
// and a valid record follows it: the file is not a journal, or was damaged or edited, and guessing could
// send an item twice or never. (Unreadable lines with nothing valid after them are a torn tail, which Open
// cuts off.) Line counts from 1, the header being line 1.
type CorruptError struct {
	Path string
	Line int
	Err  error // what is wrong with the line
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint: %s:%d: corrupt journal: %v", e.Path, e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// opError prefixes err with the package name and, unless err is an *fs.PathError that already names the
// file, with the operation and the file.
func opError(op, path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return fmt.Errorf("checkpoint: %s %s: %w", op, path, err)
}
