package checkpoint_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

const (
	done   = checkpoint.Done
	failed = checkpoint.Failed
	bad    = checkpoint.Bad
)

// oddKeys are keys that JSON must escape, or that are not valid UTF-8.
var oddKeys = []string{
	"", "plain", "42", `quo"te`, `back\slash`, "new\nline", "cr\rlf", "tab\t", "nul\x00", "bell\x07",
	"ünïcødé 😀", "\u2028\u2029", "<&>", "\ufffd", "bad\xffutf8", "\xc3", `{"k":"x","s":"d"}`,
	strings.Repeat("long", 50_000),
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		recs []rec
	}{
		{"empty", nil},
		{"one", []rec{{"a", done}}},
		{"each status", []rec{{"a", done}, {"b", failed}, {"line:3", bad}}},
		{"last wins", []rec{{"a", failed}, {"b", done}, {"a", done}, {"b", failed}, {"c", bad}, {"c", bad}}},
		{"failed then done", []rec{{"a", failed}, {"a", done}}},
		{"odd keys", func() []rec {
			var rs []rec
			for i, k := range oddKeys {
				rs = append(rs, rec{k, []checkpoint.Status{done, failed, bad}[i%3]})
			}
			return rs
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			want := replayed(tt.recs)

			j := open(t, path, nil)
			for _, r := range tt.recs {
				if err := j.Append(r.key, r.st); err != nil {
					t.Fatalf("Append(%q, %v) = %v", r.key, r.st, err)
				}
			}
			checkState(t, j, tt.recs, want) // before any sync
			if err := j.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			checkState(t, j, tt.recs, want) // after Close, from memory

			j = open(t, path, nil)
			checkState(t, j, tt.recs, want)
			for _, st := range []checkpoint.Status{failed, bad} {
				var wantKeys []string
				for k, s := range want {
					if s == st {
						wantKeys = append(wantKeys, k)
					}
				}
				slices.Sort(wantKeys)
				if got := keys(j, st); !slices.Equal(got, wantKeys) {
					t.Errorf("Keys(%v) = %q, want %q", st, got, wantKeys)
				}
			}
		})
	}
}

func TestNewFile(t *testing.T) {
	path := tempPath(t)
	j := open(t, path, checkpoint.Settings{"model": "m"})
	if got := j.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
	want := `{"llmbatch_checkpoint":1,"settings":{"model":"m"}}` + "\n"
	if got := string(readFile(t, path)); got != want {
		t.Errorf("new journal holds %q, want %q", got, want)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
		}
	}
}

func TestFormat(t *testing.T) {
	got := string(write(t, tempPath(t), nil, rec{"a", done}, rec{`q"\` + "\n\x01\xff", failed}, rec{"line:3", bad}))
	want := `{"llmbatch_checkpoint":1,"settings":{}}
{"k":"a","s":"d"}
{"k":"q\"\\\n\u0001\ufffd","s":"f"}
{"k":"line:3","s":"b"}
`
	if got != want {
		t.Errorf("journal file:\n%s\nwant:\n%s", got, want)
	}
}

func TestSettings(t *testing.T) {
	long := strings.Repeat("You are a careful classifier. ", 20)
	tests := []struct {
		name     string
		old, new checkpoint.Settings
		diff     []checkpoint.SettingDiff // nil: accepted
	}{
		{"same", checkpoint.Settings{"model": "m", "system": long}, checkpoint.Settings{"model": "m", "system": long}, nil},
		{"nil and empty", nil, checkpoint.Settings{}, nil},
		{"absent is empty", checkpoint.Settings{"model": "m"}, checkpoint.Settings{"model": "m", "template": ""}, nil},
		{"model", checkpoint.Settings{"model": "a"}, checkpoint.Settings{"model": "b"},
			[]checkpoint.SettingDiff{{Key: "model", Old: "a", New: "b"}}},
		{"added and removed", checkpoint.Settings{"temperature": "0"}, checkpoint.Settings{"max_tokens": "5"},
			[]checkpoint.SettingDiff{{Key: "max_tokens", New: "5"}, {Key: "temperature", Old: "0"}}},
		{"long prompt", checkpoint.Settings{"model": "m", "system": long}, checkpoint.Settings{"model": "m", "system": long + "!"},
			[]checkpoint.SettingDiff{{Key: "system", Old: long, New: long + "!"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			before := write(t, path, tt.old, rec{"a", done})
			j, err := checkpoint.Open(path, tt.new)
			if tt.diff == nil {
				if err != nil {
					t.Fatalf("Open() = %v, want nil", err)
				}
				defer j.Close()
				if st, _ := j.Status("a"); st != done {
					t.Errorf("Status(a) = %v, want done", st)
				}
				return
			}
			var me *checkpoint.MismatchError
			if !errors.As(err, &me) {
				t.Fatalf("Open() = %v, want a *MismatchError", err)
			}
			if me.Path != path || !slices.Equal(me.Diff, tt.diff) {
				t.Errorf("Open() = %#v, want Path %q, Diff %#v", me, path, tt.diff)
			}
			msg := err.Error()
			for _, d := range tt.diff {
				if !strings.Contains(msg, d.Key) {
					t.Errorf("error %q does not name %q", msg, d.Key)
				}
			}
			if len(msg) > 400 {
				t.Errorf("error is %d bytes long, want at most 400: %s", len(msg), msg)
			}
			if got := readFile(t, path); string(got) != string(before) {
				t.Errorf("refused Open changed the file to %q", got)
			}
		})
	}
}

func TestMismatchErrorMessage(t *testing.T) {
	err := &checkpoint.MismatchError{Path: "x.ckpt", Diff: []checkpoint.SettingDiff{
		{Key: "model", Old: "a", New: "b"},
		{Key: "system", Old: strings.Repeat("é", 100), New: ""},
	}}
	want := `checkpoint: x.ckpt was written with different settings: model was "a", now "b";` +
		` system was "` + strings.Repeat("é", 60) + `"…, now ""` +
		` (rerun with the same settings, or write to another output or checkpoint)`
	if got := err.Error(); got != want {
		t.Errorf("Error() = %s\nwant %s", got, want)
	}
}

func TestConcurrentReaders(t *testing.T) {
	j := open(t, tempPath(t), nil)
	const n = 2000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if err := j.Append(fmt.Sprint(i), failed); err != nil {
				t.Errorf("Append() = %v", err)
				return
			}
		}
		if err := j.Sync(); err != nil {
			t.Errorf("Sync() = %v", err)
		}
	})
	wg.Go(func() {
		for i := range n {
			j.Status(fmt.Sprint(i))
			j.Counts()
			if i%200 == 0 {
				j.Keys(failed, func(string) bool { return true })
			}
		}
	})
	wg.Wait()
	if _, f, _ := j.Counts(); f != n {
		t.Errorf("Counts() failed = %d, want %d", f, n)
	}
}

func TestAppendInvalidStatus(t *testing.T) {
	j := open(t, tempPath(t), nil)
	if err := j.Append("a", 'x'); err == nil {
		t.Fatal("Append(a, 'x') = nil, want an error")
	}
	if _, ok := j.Status("a"); ok {
		t.Error("Status(a) found a key whose Append was refused")
	}
	if err := j.Append("b", done); err != nil {
		t.Errorf("Append(b) after a refused status = %v, want nil", err)
	}
}

func TestKeysDonePanics(t *testing.T) {
	j := open(t, tempPath(t), nil)
	defer func() {
		if recover() == nil {
			t.Error("Keys(Done) did not panic")
		}
	}()
	j.Keys(done, func(string) bool { return true })
}

func TestKeysStops(t *testing.T) {
	j := open(t, tempPath(t), nil)
	for _, k := range []string{"c", "a", "b"} {
		j.Append(k, failed)
	}
	var got []string
	j.Keys(failed, func(k string) bool { got = append(got, k); return len(got) < 2 })
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Keys stopping after two = %q, want %q", got, want)
	}
}

func TestClose(t *testing.T) {
	path := tempPath(t)
	j, err := checkpoint.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	j.Append("a", done)
	if err := j.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if err := j.Append("b", done); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Append after Close = %v, want fs.ErrClosed", err)
	}
	if err := j.Sync(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Sync after Close = %v, want fs.ErrClosed", err)
	}
	if st, ok := j.Status("a"); st != done || !ok {
		t.Errorf("Status(a) after Close = %v, %v; want done, true", st, ok)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{dir, filepath.Join(dir, "missing", "x.ckpt")} {
		if j, err := checkpoint.Open(path, nil); err == nil {
			j.Close()
			t.Errorf("Open(%q) = nil error", path)
		} else if !strings.HasPrefix(err.Error(), "checkpoint: ") {
			t.Errorf("Open(%q) = %v, want a checkpoint: prefix", path, err)
		}
	}
}

func TestLockInProcess(t *testing.T) {
	path := tempPath(t)
	j := open(t, path, nil)
	_, err := checkpoint.Open(path, nil)
	var le *checkpoint.LockedError
	if !errors.Is(err, checkpoint.ErrLocked) || !errors.As(err, &le) || le.Path != path {
		t.Fatalf("second Open() = %v, want a *LockedError for %s", err, path)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path, nil) // released by Close
}

func TestLeanKeepsNewDoneKeysOutOfMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ckpt")
	j, err := checkpoint.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.Append("old", checkpoint.Done))
	must(t, j.Append("retried", checkpoint.Failed))
	j.Lean()
	must(t, j.Append("new", checkpoint.Done))
	must(t, j.Append("retried", checkpoint.Done))
	must(t, j.Append("bad", checkpoint.Bad))
	if _, ok := j.Status("new"); ok {
		t.Error("Status(new) known after a lean Append of Done, want unknown")
	}
	for key, want := range map[string]checkpoint.Status{"old": checkpoint.Done, "retried": checkpoint.Done, "bad": checkpoint.Bad} {
		if st, ok := j.Status(key); !ok || st != want {
			t.Errorf("Status(%s) = %v, %v; want %v", key, st, ok, want)
		}
	}
	must(t, j.Close())
	j, err = checkpoint.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if d, f, b := j.Counts(); d != 3 || f != 0 || b != 1 {
		t.Errorf("after reopening: Counts() = %d, %d, %d; want 3 done, 0 failed, 1 bad", d, f, b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFixedIsNotCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ckpt")
	j, err := checkpoint.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.Append("l:2", checkpoint.Bad))
	must(t, j.Append("l:2", checkpoint.Fixed))
	must(t, j.Close())
	snap, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d, f, b := snap.Counts(); d+f+b != 0 {
		t.Errorf("Counts() = %d, %d, %d after a bad line was fixed, want none", d, f, b)
	}
	if st, ok := snap.Status("l:2"); !ok || st != checkpoint.Fixed || st.String() != "fixed" {
		t.Errorf("Status(l:2) = %v, %v; want fixed", st, ok)
	}
}
