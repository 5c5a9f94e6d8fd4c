package checkpoint_test

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// checkLoad loads the journal at path and checks that Load leaves the file alone and finds what Open
// would: the settings and counts given, or a *CorruptError for corruptLine when it is not 0.
func checkLoad(t *testing.T, path string, settings checkpoint.Settings, done, failed, bad, corruptLine int) {
	t.Helper()
	before := readFile(t, path)
	s, err := checkpoint.Load(path)
	if got := readFile(t, path); !bytes.Equal(got, before) {
		t.Errorf("Load changed the file to %q", got)
	}
	if corruptLine > 0 {
		if !isCorrupt(err, corruptLine) {
			t.Errorf("Load() = %v, want a *CorruptError for line %d", err, corruptLine)
		}
		return
	}
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	if d, f, b := s.Counts(); d != done || f != failed || b != bad {
		t.Errorf("Load: Counts() = %d, %d, %d; want %d, %d, %d", d, f, b, done, failed, bad)
	}
	if got := s.Settings(); len(settings) > 0 && !maps.Equal(got, settings) {
		t.Errorf("Load: Settings() = %v, want %v", got, settings)
	}
}

func TestLoad(t *testing.T) {
	recs := []rec{{"a", done}, {"b", failed}, {"l:3", bad}, {"c", failed}, {"c", done}, {"odd\n\"key\xff", failed}}
	settings := checkpoint.Settings{"model": "m", "system": "be brief"}
	path := tempPath(t)
	full := write(t, path, settings, recs...)
	writeFile(t, path, append(full, `{"k":"d","s`...)) // a torn tail, which Load ignores and keeps

	s, err := checkpoint.Load(path)
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	want := replayed(recs)
	for _, k := range []string{"a", "b", "c", "l:3", "d", "odd\n\"key\xff", "never"} {
		st, ok := s.Status(k)
		if wst, wok := want[normal(k)]; st != wst || ok != wok {
			t.Errorf("Status(%q) = %v, %v; want %v, %v", k, st, ok, wst, wok)
		}
	}
	if d, f, b := s.Counts(); d != 2 || f != 2 || b != 1 {
		t.Errorf("Counts() = %d, %d, %d; want 2, 2, 1", d, f, b)
	}
	var failedKeys []string
	s.Keys(failed, func(k string) bool { failedKeys = append(failedKeys, k); return true })
	if want := []string{"b", normal("odd\n\"key\xff")}; !slices.Equal(failedKeys, want) {
		t.Errorf("Keys(failed) = %q, want %q", failedKeys, want)
	}
	got := s.Settings()
	if !maps.Equal(got, settings) {
		t.Errorf("Settings() = %v, want %v", got, settings)
	}
	got["model"] = "changed"
	if s.Settings()["model"] != "m" {
		t.Error("changing the map Settings returned changed the snapshot")
	}
	if b := readFile(t, path); !bytes.HasSuffix(b, []byte(`{"k":"d","s`)) {
		t.Errorf("Load cut the torn tail: the file ends in %q", b[max(len(b)-20, 0):])
	}
}

func TestLoadEmpty(t *testing.T) {
	for name, file := range map[string]string{"empty": "", "torn header": `{"llmbatch_ch`, "NULs": "\x00\x00\x00"} {
		t.Run(name, func(t *testing.T) {
			path := tempPath(t)
			writeFile(t, path, []byte(file))
			s, err := checkpoint.Load(path)
			if err != nil {
				t.Fatalf("Load() = %v", err)
			}
			if d, f, b := s.Counts(); d+f+b != 0 || s.Settings() != nil {
				t.Errorf("Load() = counts %d, %d, %d, settings %v; want an empty journal", d, f, b, s.Settings())
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := checkpoint.Load(filepath.Join(dir, "missing.ckpt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
	if _, err := checkpoint.Load(dir); err == nil {
		t.Error("Load(directory) = nil error")
	}
	path := tempPath(t)
	writeFile(t, path, []byte(`{"id":"t-1","prompt":"hi"}`+"\n"))
	if _, err := checkpoint.Load(path); !isCorrupt(err, 1) {
		t.Errorf("Load(not a journal) = %v, want a *CorruptError for line 1", err)
	}
}

func TestKeysDonePanicsOnSnapshot(t *testing.T) {
	path := tempPath(t)
	write(t, path, nil, rec{"a", done})
	s, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Snapshot.Keys(Done) did not panic")
		}
	}()
	s.Keys(done, func(string) bool { return true })
}

// TestLoadWhileOpen loads a journal that an open Journal holds locked and appends to: Load sees every
// synced record, and neither disturbs the other.
func TestLoadWhileOpen(t *testing.T) {
	path := tempPath(t)
	j := open(t, path, checkpoint.Settings{"model": "m"})
	for i, k := range []string{"a", "b", "c"} {
		if err := j.Append(k, []checkpoint.Status{done, failed, bad}[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.Load(path)
	if err != nil {
		t.Fatalf("Load() while the journal is open = %v", err)
	}
	if d, f, b := s.Counts(); d != 1 || f != 1 || b != 1 || s.Settings()["model"] != "m" {
		t.Errorf("Load() = counts %d, %d, %d, settings %v; want 1, 1, 1 and model m", d, f, b, s.Settings())
	}
	if err := j.Append("d", done); err != nil {
		t.Fatalf("Append() after Load = %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close() after Load = %v", err)
	}
	s, err = checkpoint.Load(path)
	if err != nil {
		t.Fatalf("Load() after Close = %v", err)
	}
	if d, _, _ := s.Counts(); d != 2 {
		t.Errorf("Load() after Close: Counts() done = %d, want 2", d)
	}
}

func TestLocked(t *testing.T) {
	path := tempPath(t)
	check := func(when string, want bool) {
		t.Helper()
		if got, err := checkpoint.Locked(path); got != want || err != nil {
			t.Errorf("Locked() %s = %v, %v; want %v, nil", when, got, err, want)
		}
	}
	check("with no file", false)
	j := open(t, path, nil)
	check("while a Journal holds it", true)
	check("asked twice", true)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	check("after Close", false)
	check("asked again", false) // Locked released its own lock
	open(t, path, nil)          // and Open can take the journal
}
