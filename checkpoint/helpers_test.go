package checkpoint_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// rec is one record as a test appends it.
type rec struct {
	key string
	st  checkpoint.Status
}

// open opens the journal at path and closes it when the test ends.
func open(t testing.TB, path string, s checkpoint.Settings) *checkpoint.Journal {
	t.Helper()
	j, err := checkpoint.Open(path, s)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// write creates a journal at path holding recs, and returns the file's bytes.
func write(t testing.TB, path string, s checkpoint.Settings, recs ...rec) []byte {
	t.Helper()
	j, err := checkpoint.Open(path, s)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	for _, r := range recs {
		if err := j.Append(r.key, r.st); err != nil {
			t.Fatalf("Append(%q, %v) = %v", r.key, r.st, err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	return readFile(t, path)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tempPath returns a journal path in a fresh temporary directory.
func tempPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "out.jsonl.ckpt")
}

// normal returns key as it reads back from JSON: each invalid UTF-8 byte becomes U+FFFD.
func normal(key string) string { return string([]rune(key)) }

// replayed applies recs in order, the last record for a key winning.
func replayed(recs []rec) map[string]checkpoint.Status {
	m := make(map[string]checkpoint.Status)
	for _, r := range recs {
		m[normal(r.key)] = r.st
	}
	return m
}

// checkState fails the test unless j holds exactly want for the keys of all, and counts to match.
func checkState(t testing.TB, j *checkpoint.Journal, all []rec, want map[string]checkpoint.Status) {
	t.Helper()
	for _, r := range all {
		st, ok := j.Status(r.key)
		wst, wok := want[normal(r.key)]
		if st != wst || ok != wok {
			t.Errorf("Status(%q) = %v, %v; want %v, %v", r.key, st, ok, wst, wok)
		}
	}
	var n [3]int
	for _, st := range want {
		switch st {
		case checkpoint.Done:
			n[0]++
		case checkpoint.Failed:
			n[1]++
		case checkpoint.Bad:
			n[2]++
		}
	}
	if d, f, b := j.Counts(); [3]int{d, f, b} != n {
		t.Errorf("Counts() = %d, %d, %d; want %d, %d, %d", d, f, b, n[0], n[1], n[2])
	}
}

// keys collects what j.Keys(st, ...) yields.
func keys(j *checkpoint.Journal, st checkpoint.Status) []string {
	var ks []string
	j.Keys(st, func(k string) bool { ks = append(ks, k); return true })
	return ks
}

// isCorrupt reports whether err is a *CorruptError for line.
func isCorrupt(err error, line int) bool {
	var ce *checkpoint.CorruptError
	return errors.As(err, &ce) && ce.Line == line
}

// nuls returns n NUL bytes: what a power loss leaves where a file grew but its data never reached the disk.
func nuls(n int) string { return strings.Repeat("\x00", n) }
