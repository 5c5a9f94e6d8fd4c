package batch

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// JobState is what the files of a job say it has done: the checkpoint
// reconciled with the results and errors files the way the next run's start
// will, so a line written just before a crash, not yet in the checkpoint,
// counts. Counts are of distinct items, or input lines for Invalid.
type JobState struct {
	Settings       map[string]string // the answer-shaping settings the job runs with
	Running        bool              // a run holds the checkpoint's lock: the figures are a snapshot
	Done           int64             // items with a result
	CheckpointDone int64             // items the checkpoint records as done
	ResultLines    int64             // complete lines in the results file
	Failed         int64             // items that failed and have no result
	Invalid        int64             // rejected input lines
	ByKind         map[string]int64  // errors-file kind → failed items, plus "invalid_input" → Invalid
	Warnings       []string          // what does not add up
}

// ErrNoCheckpoint is matched by the error of Inspect for a job no run has
// written yet.
var ErrNoCheckpoint = errors.New("no checkpoint")

// Inspect reads the job that writes output with the journal at ckpt,
// without writing or locking anything, even while a run is writing them.
func Inspect(output, ckpt string) (*JobState, error) {
	running, err := checkpoint.Locked(ckpt)
	if err != nil {
		return nil, &SetupError{err}
	}
	snap, err := checkpoint.Load(ckpt)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &SetupError{fmt.Errorf("%w %s: no run has written %s yet (or give its --checkpoint)", ErrNoCheckpoint, ckpt, output)}
	} else if err != nil {
		return nil, &SetupError{err}
	}
	js := &JobState{Running: running, Settings: map[string]string{}, ByKind: map[string]int64{}}
	for k, v := range snap.Settings() {
		if v != "" {
			js.Settings[k] = v
		}
	}
	t := &tally{failed: map[string]string{}, bad: map[string]bool{}}
	snap.Keys(checkpoint.Failed, func(k string) bool { t.failed[k] = "unknown"; return true })
	snap.Keys(checkpoint.Bad, func(k string) bool { t.bad[k] = true; return true })
	rc := reconciler{status: snap.Status, complete: true}
	if err := rc.errorsFile(ErrorsPath(output), t.errorsLine); err != nil {
		return nil, err
	}
	if err := rc.resultsFile(output, t.resultLine); err != nil {
		return nil, err
	}
	done, _, _ := snap.Counts()
	js.CheckpointDone = int64(done)
	t.fill(js, output)
	return js, nil
}

// tally counts what the reconciler finds: an errors line the journal has
// not moved past counts, and a result line makes its item done.
type tally struct {
	failed     map[string]string // item key → kind of its last errors line ("unknown" without one)
	bad        map[string]bool   // line keys of rejected input lines
	confirmed  int64             // result lines of items the checkpoint records as done
	unrecorded int64             // result lines of items it does not (yet)
	lines      int64             // result lines
	notResults int64             // lines of the results file that are not result lines
	notErrors  int64             // lines of the errors file that are not errors lines
}

func (t *tally) errorsLine(l *fileLine) error {
	switch {
	case l.key == "":
		t.notErrors++
	case l.stale(): // a failure since answered, or a line error since fixed
	case l.st == checkpoint.Bad:
		t.bad[l.key] = true
	default:
		t.failed[l.key] = l.kind
	}
	return nil
}

func (t *tally) resultLine(l *fileLine) error {
	t.lines++
	switch {
	case l.key == "":
		t.notResults++
	case l.unrecorded():
		t.unrecorded++
		delete(t.failed, l.key)
	default:
		t.confirmed++
	}
	return nil
}

// fill sets the counts of js and warns of what does not add up.
func (t *tally) fill(js *JobState, output string) {
	js.ResultLines = t.lines
	js.Done = js.CheckpointDone + t.unrecorded
	js.Failed, js.Invalid = int64(len(t.failed)), int64(len(t.bad))
	for _, kind := range t.failed {
		js.ByKind[kind]++
	}
	if js.Invalid > 0 {
		js.ByKind[KindInvalidInput] = js.Invalid
	}
	warn := func(format string, a ...any) { js.Warnings = append(js.Warnings, fmt.Sprintf(format, a...)) }
	if missing := js.CheckpointDone - t.confirmed; missing > 0 {
		warn("%d items the checkpoint records as done have no line in %s (was it moved, cut or edited?); a run will not send them again", missing, output)
	}
	if t.notResults > 0 {
		warn("%d lines of %s are not result lines", t.notResults, output)
	}
	if t.notErrors > 0 {
		warn("%d lines of %s are not errors lines", t.notErrors, ErrorsPath(output))
	}
}
