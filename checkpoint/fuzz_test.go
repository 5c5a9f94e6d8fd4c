package checkpoint_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// emptyHeader is the header of a journal with no settings.
const emptyHeader = `{"llmbatch_checkpoint":1,"settings":{}}` + "\n"

// FuzzJournal checks two properties. Any bytes after a valid header either open, leaving a prefix of the
// file that reopens to the same state, or are refused with a *CorruptError, and never panic; Load agrees. And a journal
// written by Append and cut at any byte replays exactly the records that were complete before the cut.
func FuzzJournal(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.ckpt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		_, body, _ := bytes.Cut(b, []byte("\n"))
		f.Add(body, uint16(len(b)/2))
	}
	f.Fuzz(func(t *testing.T, body []byte, cut uint16) {
		checkAnyTail(t, body)
		checkCut(t, recsFrom(body), int(cut))
	})
}

// checkAnyTail opens a journal made of a valid header and body.
func checkAnyTail(t *testing.T, body []byte) {
	path := tempPath(t)
	orig := append([]byte(emptyHeader), body...)
	writeFile(t, path, orig)
	snap, lerr := checkpoint.Load(path)
	j, err := checkpoint.Open(path, nil)
	if err != nil {
		var ce *checkpoint.CorruptError
		if !errors.As(err, &ce) || ce.Line < 2 {
			t.Fatalf("Open() = %v, want nil or a *CorruptError past the header", err)
		}
		if !isCorrupt(lerr, ce.Line) {
			t.Fatalf("Load() = %v where Open() = %v", lerr, err)
		}
		if got := readFile(t, path); !bytes.Equal(got, orig) {
			t.Fatalf("refused Open changed the file")
		}
		return
	}
	d, f, b := j.Counts()
	if lerr != nil {
		t.Fatalf("Load() = %v where Open() succeeded", lerr)
	}
	if ld, lf, lb := snap.Counts(); ld != d || lf != f || lb != b {
		t.Fatalf("Load: Counts() = %d, %d, %d; Open had %d, %d, %d", ld, lf, lb, d, f, b)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if !bytes.HasPrefix(orig, got) || len(got) < len(emptyHeader) || got[len(got)-1] != '\n' {
		t.Fatalf("after Open the file holds %q, want a prefix of the original ending in a newline", got)
	}
	j = open(t, path, nil)
	if d2, f2, b2 := j.Counts(); d2 != d || f2 != f || b2 != b {
		t.Fatalf("reopened Counts() = %d, %d, %d; first Open had %d, %d, %d", d2, f2, b2, d, f, b)
	}
}

// recsFrom makes up to 64 records from fuzz bytes: keys are the NUL-separated pieces.
func recsFrom(body []byte) []rec {
	var recs []rec
	for i, k := range bytes.Split(body, []byte{0}) {
		if i == 64 {
			break
		}
		recs = append(recs, rec{string(k), []checkpoint.Status{done, failed, bad}[len(k)%3]})
	}
	return recs
}

// checkCut writes recs, cuts the file at cut (modulo its length) and checks what replays.
func checkCut(t *testing.T, recs []rec, cut int) {
	path := tempPath(t)
	full := write(t, path, nil, recs...)
	cut %= len(full) + 1
	writeFile(t, path, full[:cut])
	j := open(t, path, nil)
	n := max(bytes.Count(full[:cut], []byte("\n"))-1, 0) // complete records before the cut
	checkState(t, j, recs, replayed(recs[:n]))
}
