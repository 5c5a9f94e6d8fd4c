package batchapi

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	cfg := PlanConfig{MaxRequests: 2, Dir: t.TempDir()}
	plans := planAll(t, cfg, lines(t, 4, 200))
	if n, err := Verify(plans[0].Path, plans[0].Hash); err != nil || n != plans[0].Bytes {
		t.Fatalf("Verify(a planned file) = %d, %v; want %d, nil", n, err, plans[0].Bytes)
	}
	if _, err := Verify(plans[0].Path, plans[1].Hash); !errors.Is(err, ErrHashMismatch) {
		t.Errorf("Verify(another shard's hash) = %v, want ErrHashMismatch", err)
	}
	if err := os.WriteFile(plans[1].Path, []byte("changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(plans[1].Path, plans[1].Hash); !errors.Is(err, ErrHashMismatch) {
		t.Errorf("Verify(a changed file) = %v, want ErrHashMismatch", err)
	}
	if _, err := Verify(filepath.Join(cfg.Dir, "gone.jsonl"), plans[0].Hash); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Verify(a missing file) = %v, want fs.ErrNotExist", err)
	}
}

func TestReadLinesRefuses(t *testing.T) {
	for _, in := range []string{"{not json}\n", `{"custom_id":"","body":{}}`, `{"custom_id":"a"}`} {
		if err := ReadLines(strings.NewReader(in), 0, func(Line) error { return nil }); !errors.Is(err, ErrShardLine) {
			t.Errorf("ReadLines(%q) = %v, want ErrShardLine", in, err)
		}
	}
	long := `{"custom_id":"a","body":{"p":"` + strings.Repeat("x", 200<<10) + `"}}`
	if err := ReadLines(strings.NewReader(long), 100<<10, func(Line) error { return nil }); !errors.Is(err, ErrShardLine) {
		t.Errorf("ReadLines(a 200 KiB line, limit 100 KiB) = %v, want ErrShardLine", err)
	}
	var got Line
	if err := ReadLines(strings.NewReader(long), 0, func(l Line) error { got = l; return nil }); err != nil || len(got.Body) < 200<<10 {
		t.Errorf("ReadLines(a 200 KiB line) = %v, body of %d bytes", err, len(got.Body))
	}
}
