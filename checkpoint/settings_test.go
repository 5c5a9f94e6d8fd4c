package checkpoint_test

import (
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// TestRunSettings checks that run settings are recorded in a header field of their own, read back under their
// prefix, and never compared: a rerun with other limits is not refused, one with another model still is.
func TestRunSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ckpt")
	first := checkpoint.Settings{"model": "m", "run.provider": "deepseek", "run.concurrency": "4"}
	b := write(t, path, first, rec{"a", checkpoint.Done})
	wantHeader := `{"llmbatch_checkpoint":1,"settings":{"model":"m"},"run":{"concurrency":"4","provider":"deepseek"}}` + "\n"
	if header, _, _ := strings.Cut(string(b), "\n"); header+"\n" != wantHeader {
		t.Errorf("header = %s\nwant     %s", header, wantHeader)
	}

	// Another concurrency and provider: not refused, and the first run's settings stay recorded.
	j, err := checkpoint.Open(path, checkpoint.Settings{"model": "m", "run.provider": "openai", "run.concurrency": "16"})
	if err != nil {
		t.Fatalf("Open with other run settings = %v, want nil", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Settings(); !maps.Equal(got, first) {
		t.Errorf("Load().Settings() = %v, want %v", got, first)
	}
	if got, want := s.Settings().Run(), map[string]string{"provider": "deepseek", "concurrency": "4"}; !maps.Equal(got, want) {
		t.Errorf("Settings().Run() = %v, want %v", got, want)
	}
	if got := s.Settings().Answer(); !maps.Equal(got, checkpoint.Settings{"model": "m"}) {
		t.Errorf("Settings().Answer() = %v, want model only", got)
	}

	// Another model is still refused, and the diff names only answer-shaping keys.
	_, err = checkpoint.Open(path, checkpoint.Settings{"model": "n", "run.concurrency": "8"})
	var me *checkpoint.MismatchError
	if !errors.As(err, &me) || len(me.Diff) != 1 || me.Diff[0].Key != "model" {
		t.Errorf("Open with another model = %v, want a *MismatchError on model alone", err)
	}
}

// TestHeaderWithoutRunSettings checks that a journal with no run settings is written exactly as before they
// existed, and that a version-1 journal written then opens with none.
func TestHeaderWithoutRunSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ckpt")
	b := write(t, path, checkpoint.Settings{"model": "m"})
	if want := `{"llmbatch_checkpoint":1,"settings":{"model":"m"}}` + "\n"; string(b) != want {
		t.Errorf("journal = %q, want %q", b, want)
	}
	old := filepath.Join(t.TempDir(), "old.ckpt")
	writeFile(t, old, readFile(t, filepath.Join("testdata", "settings.ckpt")))
	j := open(t, old, checkpoint.Settings{"model": "m", "system": "be brief", "run.rpm": "60"})
	if st, ok := j.Status("a"); !ok || st != checkpoint.Done {
		t.Errorf("Status(a) in an old journal = %v, %v; want done", st, ok)
	}
	j.Close()
	s, err := checkpoint.Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if run := s.Settings().Run(); len(run) != 0 {
		t.Errorf("an old journal's run settings = %v, want none (the header is not rewritten)", run)
	}
}
