// Package checkpoint keeps the durable journal of finished item ids that lets an interrupted run resume
// without sending any item twice. It imports the standard library, and of the module only internal/jsonl
// (its line reader) and internal/filelock (its lock), which import nothing else.
package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/llmbatch/llmbatch/internal/filelock"
)

// A Journal is an append-only file of records, each saying that a key is [Done], [Failed] or [Bad]. [Open]
// replays the file into an in-memory set; [Journal.Append] adds to both.
//
// One goroutine (the pipeline's writer) owns a Journal and alone calls Append, Sync and Close. Status, Counts,
// Keys, Path and Repaired are safe for concurrent use with those and with each other, so a reader goroutine
// may consult the journal while the writer appends. Another process may read the file meanwhile with [Load].
//
// # Durability
//
// Append only buffers. A record is durable once Sync (or Close) has returned nil. To keep the exactly-once
// invariant, the caller syncs the output file before syncing the journal records that point at it: a Done
// record must never reach the disk before its result line does.
//
// # Memory
//
// Keys are held as 128-bit hashes, about 40 bytes per distinct key with map overhead, so millions of keys fit.
// The strings themselves are kept only for keys whose current status is Failed or Bad (a small set), which
// is why [Journal.Keys] works for those two statuses only. Keys are compared as JSON reads them back: a byte
// that is not valid UTF-8 counts as U+FFFD (ids read from JSON input are always valid).
//
// # Errors
//
// The first failed write or fsync (a full disk, say) is returned by that call and by every Append and Sync
// after it: the file may then end in a torn record, and nothing more must be written behind it. Reopening
// the journal trims the torn record and replays what is durable.
type Journal struct {
	path string

	// Owned by the writing goroutine.
	f      *os.File
	w      *bufio.Writer
	line   []byte // the record being encoded, reused by every Append
	dirty  bool   // written to w since the last successful Sync
	err    error  // the first write error, or errClosed; returned by every later Append and Sync
	closed bool

	repaired int64 // bytes Open cut from the end of the file; set by Open, then read-only

	mu   sync.RWMutex // guards idx and lean, which reader goroutines may read
	idx  index
	lean bool // Done records of new keys are written, not indexed (see Lean)
}

var errClosed = fmt.Errorf("checkpoint: journal %w", os.ErrClosed)

// Open opens the journal at path, or creates it (mode 0600, its directory synced) holding settings s.
// It takes an exclusive lock on the file, held until Close, and replays the records.
//
// Open returns:
//   - a [*LockedError] (errors.Is(err, [ErrLocked])) when another process or Journal holds the lock;
//   - a [*MismatchError] when the journal was written with settings other than s;
//   - a [*CorruptError] naming the line when a line cannot be read and a valid record follows it, or
//     the file is not a journal;
//   - an error wrapping the *fs.PathError for anything the file system refuses.
//
// A torn tail is truncated away, and the cut fsynced, before Open returns: everything from the first line
// that is not a valid record, when no valid record follows it. A crash while appending leaves a last line
// without its newline; a power loss can leave more (a torn record followed by NUL bytes, or NULs alone,
// where the file grew but its data never reached the disk). Dropping records is always safe for the
// caller, which re-derives them from its own files; see [Journal.Repaired]. Records replay in order and
// the last one for a key wins, so a key that Failed and was later Done is Done.
func Open(path string, s Settings) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, opError("open", path, err)
	}
	if err := filelock.Lock(f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrHeld) {
			return nil, &LockedError{Path: path}
		}
		return nil, opError("lock", path, err)
	}
	j := &Journal{path: path, f: f}
	if err := j.load(s); err != nil {
		filelock.Unlock(f)
		f.Close()
		return nil, err
	}
	j.w = bufio.NewWriterSize(f, 64<<10)
	return j, nil
}

// Path returns the journal's file name as given to Open.
func (j *Journal) Path() string { return j.path }

// Repaired returns how many bytes Open cut from the end of the file: a torn tail left by a crash or a
// power loss (see [Open]), or a torn header when the journal was started afresh. It is 0 for a clean file.
// Records in those bytes are lost, which costs no work when the caller re-derives them from its own files,
// as the pipeline does from the results and errors files; it is worth a line in the log.
func (j *Journal) Repaired() int64 { return j.repaired }

// Status returns the current status of key, and false if the journal has no record of it.
// It reflects every Append made so far, durable or not.
func (j *Journal) Status(key string) (Status, bool) {
	h := hashString(key)
	j.mu.RLock()
	defer j.mu.RUnlock()
	st, ok := j.idx.status[h]
	return st, ok
}

// Counts returns how many distinct keys are currently Done, Failed and Bad.
func (j *Journal) Counts() (done, failed, bad int) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.idx.counts[0], j.idx.counts[1], j.idx.counts[2]
}

// Keys calls fn with each key whose current status is st, in sorted order, until fn returns false.
// st must be Failed or Bad: Done keys are kept only as hashes, and Keys panics if asked for them.
// fn runs without the journal's lock held, so it may call any method.
func (j *Journal) Keys(st Status, fn func(key string) bool) {
	mustKeepNames(st)
	j.mu.RLock()
	ks := j.idx.keys(st)
	j.mu.RUnlock()
	eachKey(ks, fn)
}

// Append records that key now has status st. The record is buffered, not yet durable (see [Journal.Sync]),
// but Status and Counts reflect it at once. Append returns an error if st is not Done, Failed or Bad, and
// the journal's sticky write error if an earlier write failed or the journal is closed.
func (j *Journal) Append(key string, st Status) error {
	if !st.valid() {
		return fmt.Errorf("checkpoint: Append(%s, %v): invalid status", clip(key), st)
	}
	if j.err != nil {
		return j.err
	}
	j.line = appendRecord(j.line[:0], key, st)
	if _, err := j.w.Write(j.line); err != nil {
		return j.fail("write", err)
	}
	j.dirty = true
	h := hashString(key)
	j.mu.Lock()
	if _, known := j.idx.status[h]; !j.lean || st != Done || known {
		set(&j.idx, h, key, st)
	}
	j.mu.Unlock()
	return nil
}

// Lean makes later Appends of Done records for keys the journal has not
// seen go to the file only, not into memory. Status then answers for keys
// replayed at Open and keys appended with another status (a Failed key
// later Done reads Done), and Counts counts those. A caller that never asks
// about a key again once it is Done, as the pipeline does (it reads each
// id once), keeps memory flat however many records a run appends; the next
// Open replays them all.
func (j *Journal) Lean() {
	j.mu.Lock()
	j.lean = true
	j.mu.Unlock()
}

// Sync writes out the buffered records and fsyncs the file. When it returns nil, every record appended so
// far survives a crash or power loss. A failure is sticky, as for Append.
func (j *Journal) Sync() error {
	if j.err != nil {
		return j.err
	}
	if !j.dirty {
		return nil
	}
	if err := j.w.Flush(); err != nil {
		return j.fail("write", err)
	}
	if err := j.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages: a retry could "succeed" without
		// the data. So the failure is final.
		return j.fail("sync", err)
	}
	j.dirty = false
	return nil
}

// Close syncs the journal, releases its lock and closes the file. It returns the sync's error, if any;
// the lock is released either way. Calling Close again does nothing and returns nil. After Close, Status,
// Counts and Keys still answer from memory; Append and Sync return an error.
func (j *Journal) Close() error {
	if j.closed {
		return nil
	}
	j.closed = true
	err := j.Sync()
	if uerr := filelock.Unlock(j.f); uerr != nil && err == nil {
		err = opError("unlock", j.path, uerr)
	}
	if cerr := j.f.Close(); cerr != nil && err == nil {
		err = opError("close", j.path, cerr)
	}
	if j.err == nil {
		j.err = errClosed
	}
	return err
}

// fail makes err the journal's sticky error and returns it.
func (j *Journal) fail(op string, err error) error {
	j.err = opError(op, j.path, err)
	return j.err
}
