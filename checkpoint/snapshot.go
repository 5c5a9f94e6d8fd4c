package checkpoint

import (
	"errors"
	"io/fs"
	"maps"
	"os"

	"github.com/llmbatch/llmbatch/internal/filelock"
)

// A Snapshot is a journal as [Load] read it: its settings and the status of every key at that moment.
// It never changes, and is safe for concurrent use.
type Snapshot struct {
	settings Settings
	idx      index
}

// Load reads the journal at path without locking or writing it, so it may look at a journal that a run
// holds open and appends to (`llmbatch status` does). It replays the file as [Open] does, with the same
// errors: a *[CorruptError] when a valid record follows a line that is not one, an error wrapping
// [fs.ErrNotExist] when there is no file. A torn tail (see [Open]) is left in place and ignored, and so is
// a record being written at that moment. A file that holds no header yet, being empty or torn while it was
// created, is an empty journal with no settings.
//
// Load does not check settings: [Snapshot.Settings] returns the recorded ones.
func Load(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, opError("load", path, err)
	}
	defer f.Close()
	s := &Snapshot{idx: newIndex(fileSize(f))}
	rp := newReplayer(f, path)
	settings, fresh, err := rp.header()
	if err != nil || fresh {
		return s, err
	}
	if _, err := rp.records(&s.idx); err != nil {
		return nil, err
	}
	s.settings = settings
	return s, nil
}

// Settings returns a copy of the settings recorded in the journal's header; nil for a journal with no header.
func (s *Snapshot) Settings() Settings { return maps.Clone(s.settings) }

// Status returns the status of key, and false if the journal has no record of it.
func (s *Snapshot) Status(key string) (Status, bool) { return s.idx.lookup(key) }

// Counts returns how many distinct keys are Done, Failed and Bad.
func (s *Snapshot) Counts() (done, failed, bad int) {
	return s.idx.counts[0], s.idx.counts[1], s.idx.counts[2]
}

// Keys calls fn with each key whose status is st, in sorted order, until fn returns false. As for
// [Journal.Keys], st must be Failed or Bad, and Keys panics if asked for Done keys.
func (s *Snapshot) Keys(st Status, fn func(key string) bool) {
	mustKeepNames(st)
	eachKey(s.idx.keys(st), fn)
}

// Locked reports whether a [Journal] holds the journal at path open, in this process or another: most
// likely, a run is writing to it. It tries to take a shared lock without waiting and, if it gets it, releases
// it at once. A missing file is not locked: Locked returns (false, nil).
//
// Two callers of Locked never see each other, the lock being shared. But a run that opens the journal in
// the instant Locked holds it fails with a *[LockedError], as if another run held it, and should be started
// again. Where [Open] takes no lock (systems with neither flock nor LockFileEx: illumos, AIX, Plan 9,
// WebAssembly), Locked cannot tell and always reports false.
func Locked(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, opError("open", path, err)
	}
	defer f.Close()
	switch err := filelock.LockShared(f); {
	case errors.Is(err, filelock.ErrHeld):
		return true, nil
	case err != nil:
		return false, opError("lock", path, err)
	}
	if err := filelock.Unlock(f); err != nil {
		return false, opError("unlock", path, err)
	}
	return false, nil
}
