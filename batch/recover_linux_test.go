package batch

import (
	"errors"
	"os"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestRecoverSyncsFilesBeforeJournal: recovery records in the journal a
// result line a killed run wrote but did not journal only once the results
// and errors files are fsynced, the order the writer keeps: a key reaches
// the journal only after its line is durable. Here the errors file's fsync
// fails (it is /dev/null behind its name, which cannot be synced): the run
// is refused and the journal gains nothing.
func TestRecoverSyncsFilesBeforeJournal(t *testing.T) {
	all := prompts(3)
	j := newJob(t, mock.New(mock.Config{}), all[:2]...)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(j.out(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"k2","output":"x"}` + "\n") // written, not journaled: a kill came first
	f.Close()
	if err := os.Symlink("/dev/null", ErrorsPath(j.out())); err != nil {
		t.Fatal(err)
	}
	_, err = j.run()
	if !errors.As(err, new(*WriteError)) {
		t.Fatalf("Run() with an errors file that cannot be synced = %v, want a *WriteError", err)
	}
	snap, err := checkpoint.Load(CheckpointPath(j.out()))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := snap.Status(itemKey("k2")); ok {
		t.Errorf("the journal records k2 as %v though the files were not synced; want no record", st)
	}
}
