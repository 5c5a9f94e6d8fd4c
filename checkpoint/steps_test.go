package checkpoint_test

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// TestSteps: step lines appended among records come back, in order, from
// Open and Load; records replay as before; a torn step is cut like a torn
// record; a step after a damaged line is corruption.
func TestSteps(t *testing.T) {
	path := tempPath(t)
	j, err := checkpoint.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{`{"shard":1,"step":"planned"}`, `{"step":"job","job":"ab12"}`, `{"shard":1,"step":"uploaded","file":"f"}`}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(j.AppendStep([]byte(steps[0] + "\n")))
	must(j.Append("i:a", checkpoint.Done))
	must(j.AppendStep([]byte(steps[1])))
	must(j.Append("i:b", checkpoint.Failed))
	must(j.AppendStep([]byte(steps[2])))
	for _, bad := range []string{`{"k":"x","step":"y"}`, `{"shard":1}`, `[1]`, "{\"step\":1}\n{\"step\":2}", `{"step":`} {
		if err := j.AppendStep([]byte(bad)); !errors.Is(err, checkpoint.ErrNotStep) {
			t.Errorf("AppendStep(%q) = %v, want ErrNotStep", bad, err)
		}
	}
	must(j.Close())

	j = open(t, path, nil)
	if got := strs(j.Steps()); !slices.Equal(got, steps) {
		t.Errorf("Open: Steps() = %q, want %q", got, steps)
	}
	if st, _ := j.Status("i:b"); st != checkpoint.Failed {
		t.Errorf("Status(i:b) = %v, want failed", st)
	}
	j.Close()
	snap, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strs(snap.Steps()); !slices.Equal(got, steps) {
		t.Errorf("Load: Steps() = %q, want %q", got, steps)
	}

	// A step torn before its newline is a torn tail: cut, and the rest kept.
	b := readFile(t, path)
	writeFile(t, path, append(slices.Clone(b), `{"shard":2,"step":"plan`...))
	j = open(t, path, nil)
	if got := strs(j.Steps()); !slices.Equal(got, steps) || j.Repaired() == 0 {
		t.Errorf("torn step: Steps() = %q, Repaired() = %d; want %q and a cut", got, j.Repaired(), steps)
	}
	j.Close()

	// A complete step after a line that is neither: the file was damaged.
	writeFile(t, path, append(append(slices.Clone(b), "garbage\n"...), `{"shard":2,"step":"planned"}`+"\n"...))
	if _, err := checkpoint.Open(path, nil); !isCorrupt(err, 7) {
		t.Errorf("step after garbage: Open = %v, want a *CorruptError at line 7", err)
	}
	os.Remove(path)
}

func strs(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}
