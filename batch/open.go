package batch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// SetupError is a problem found before any request was sent: a bad path, a
// checkpoint held by another run or written with other settings. (exit 2)
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

func setupErr(format string, a ...any) error { return &SetupError{fmt.Errorf(format, a...)} }

// openWriter checks the paths, opens the journal, repairs torn tails left by
// a crash and reconciles the journal with the results and errors files.
func openWriter(cfg *Config) (*writer, error) {
	if cfg.Output == "" {
		return nil, setupErr("no output file")
	}
	for _, p := range []string{cfg.Output, cfg.Errors, cfg.Checkpoint} {
		if err := checkPath(p, cfg.InputPath); err != nil {
			return nil, err
		}
	}
	// A run refused at setup leaves no file behind that it created.
	created := newFilesOf(cfg.Output, cfg.Checkpoint)
	// The results file is locked as well as the journal: two runs given the
	// same output and different checkpoints must not both write it.
	outLock, err := lockOutput(cfg.Output)
	if err != nil {
		return nil, err
	}
	j, err := checkpoint.Open(cfg.Checkpoint, cfg.settings())
	if err != nil {
		outLock.Close()
		if errors.Is(err, checkpoint.ErrLocked) {
			created = created.except(cfg.Checkpoint) // another run's, made since we looked
		}
		created.remove()
		return nil, &SetupError{err}
	}
	w := &writer{cfg: cfg, j: j, outLock: outLock, out: &appendFile{path: cfg.Output}, errs: &appendFile{path: cfg.Errors}}
	if err := w.recover(); err != nil {
		j.Close()
		outLock.Close()
		created.remove()
		return nil, err
	}
	if n := j.Repaired(); n > 0 {
		cfg.Logger.Warn("cut a damaged tail off the checkpoint (left by a crash); the results file has the truth", "bytes", n)
	}
	// The reader asks about each id once, before it is sent: what this run
	// records need not stay in memory.
	j.Lean()
	return w, nil
}

// newFiles lists which of paths do not exist yet.
type newFiles []string

func newFilesOf(paths ...string) newFiles {
	var nf newFiles
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			nf = append(nf, p)
		}
	}
	return nf
}

func (nf newFiles) except(path string) newFiles {
	var out newFiles
	for _, p := range nf {
		if p != path {
			out = append(out, p)
		}
	}
	return out
}

// remove deletes the files a refused setup created.
func (nf newFiles) remove() {
	for _, p := range nf {
		os.Remove(p)
	}
}

func checkPath(p, input string) error {
	dir := filepath.Dir(p)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return setupErr("directory %s of %s does not exist", dir, p)
	}
	if fi, err := os.Stat(p); err == nil {
		if fi.IsDir() {
			return setupErr("%s is a directory", p)
		}
		if input != "" && input != "-" {
			if in, err := os.Stat(input); err == nil && os.SameFile(fi, in) {
				return setupErr("%s is the input file: refusing to write over it", p)
			}
		}
	}
	return nil
}

// recover trims torn last lines and records in the journal every result or
// error line a crash left unrecorded (the line was written, the journal
// not). It keeps the writer's order: the results and errors files are
// fsynced first (their lines may still be in the page cache only, the
// crash having come before their fsync), and only then are the records
// appended and the journal synced, so the journal never says more than the
// files hold.
func (w *writer) recover() error {
	for _, p := range []string{w.cfg.Output, w.cfg.Errors} {
		if _, err := repairTail(p); err != nil {
			return &SetupError{err}
		}
		if err := syncFile(p); err != nil {
			return err
		}
	}
	rc := reconciler{status: w.j.Status}
	added := 0
	err := rc.unrecorded(w.cfg.Output, w.cfg.Errors, func(key string, st checkpoint.Status) error {
		added++
		return w.j.Append(key, st)
	})
	if err != nil {
		return err
	}
	if added == 0 {
		return nil
	}
	w.cfg.Logger.Info("recovered results written just before an interruption", "lines", added)
	if err := w.j.Sync(); err != nil {
		return &WriteError{err}
	}
	return nil
}

// syncFile fsyncs the file at path, if it exists.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return &WriteError{err}
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &WriteError{fmt.Errorf("%s: sync: %w", path, err)}
	}
	return nil
}
