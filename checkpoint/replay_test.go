package checkpoint_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// TestTornTail cuts a journal at every byte and checks that Open replays exactly the complete records before
// the cut, trims the rest, and then appends records that read back.
func TestTornTail(t *testing.T) {
	recs := []rec{{"a", done}, {"b\n\"x\"", failed}, {"ünï", bad}, {"b\n\"x\"", done}, {"last-one", failed}}
	full := write(t, tempPath(t), nil, recs...)
	for cut := range len(full) + 1 {
		path := tempPath(t)
		writeFile(t, path, full[:cut])
		j, err := checkpoint.Open(path, nil)
		if err != nil {
			t.Fatalf("Open(cut at %d) = %v", cut, err)
		}
		lines := bytes.Count(full[:cut], []byte("\n"))
		n := max(lines-1, 0) // complete records before the cut
		checkState(t, j, recs, replayed(recs[:n]))
		wantCut := int64(cut) // a torn header: started afresh
		if lines > 0 {
			wantCut = int64(cut - bytes.LastIndexByte(full[:cut], '\n') - 1)
		}
		if got := j.Repaired(); got != wantCut {
			t.Errorf("cut at %d: Repaired() = %d, want %d", cut, got, wantCut)
		}

		if err := j.Append("after", done); err != nil {
			t.Fatalf("cut at %d: Append() = %v", cut, err)
		}
		if err := j.Close(); err != nil {
			t.Fatalf("cut at %d: Close() = %v", cut, err)
		}
		var want []byte
		if lines == 0 {
			want = append(want, full[:bytes.IndexByte(full, '\n')+1]...) // a fresh header
		} else {
			want = append(want, full[:bytes.LastIndexByte(full[:cut], '\n')+1]...)
		}
		want = append(want, `{"k":"after","s":"d"}`+"\n"...)
		if got := readFile(t, path); !bytes.Equal(got, want) {
			t.Fatalf("cut at %d, then Append: file holds\n%q\nwant\n%q", cut, got, want)
		}
		j = open(t, path, nil)
		checkState(t, j, append(recs, rec{"after", done}), replayed(append(recs[:n:n], rec{"after", done})))
	}
}

// TestTestdata opens each file in testdata and checks what Open makes of it.
func TestTestdata(t *testing.T) {
	tests := []struct {
		file              string
		settings          checkpoint.Settings
		done, failed, bad int
		corruptLine       int    // Open fails with a *CorruptError for this line
		after             string // the file after Open, if it changes
	}{
		{file: "valid.ckpt", done: 5, failed: 1, bad: 2},
		{file: "settings.ckpt", settings: checkpoint.Settings{"model": "m", "system": "be brief"}, done: 1, failed: 1},
		{file: "torn.ckpt", done: 2, after: "{\"llmbatch_checkpoint\":1,\"settings\":{}}\n{\"k\":\"a\",\"s\":\"d\"}\n{\"k\":\"b\",\"s\":\"d\"}\n"},
		{file: "invalid-last.ckpt", done: 2, after: "{\"llmbatch_checkpoint\":1,\"settings\":{}}\n{\"k\":\"a\",\"s\":\"d\"}\n{\"k\":\"b\",\"s\":\"d\"}\n"},
		{file: "zero-tail.ckpt", done: 1, after: "{\"llmbatch_checkpoint\":1,\"settings\":{}}\n{\"k\":\"a\",\"s\":\"d\"}\n"},
		{file: "torn-header.ckpt", after: "{\"llmbatch_checkpoint\":1,\"settings\":{}}\n"},
		{file: "power-loss.ckpt", done: 1, failed: 1, after: "{\"llmbatch_checkpoint\":1,\"settings\":{}}\n{\"k\":\"a\",\"s\":\"d\"}\n{\"k\":\"b\",\"s\":\"f\"}\n"},
		{file: "corrupt-middle.ckpt", corruptLine: 3},
		{file: "nul-middle.ckpt", corruptLine: 3},
		{file: "version2.ckpt", corruptLine: 1},
		{file: "not-journal.ckpt", corruptLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			orig := readFile(t, filepath.Join("testdata", tt.file))
			path := tempPath(t)
			writeFile(t, path, orig)
			checkLoad(t, path, tt.settings, tt.done, tt.failed, tt.bad, tt.corruptLine)
			j, err := checkpoint.Open(path, tt.settings)
			if tt.corruptLine > 0 {
				if !isCorrupt(err, tt.corruptLine) {
					t.Fatalf("Open() = %v, want a *CorruptError for line %d", err, tt.corruptLine)
				}
				if got := readFile(t, path); !bytes.Equal(got, orig) {
					t.Errorf("refused Open changed the file to %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			defer j.Close()
			if d, f, b := j.Counts(); d != tt.done || f != tt.failed || b != tt.bad {
				t.Errorf("Counts() = %d, %d, %d; want %d, %d, %d", d, f, b, tt.done, tt.failed, tt.bad)
			}
			want := tt.after
			if want == "" {
				want = string(orig)
			}
			if got := readFile(t, path); string(got) != want {
				t.Errorf("after Open the file holds %q, want %q", got, want)
			}
		})
	}
}

func TestCorrupt(t *testing.T) {
	const h = `{"llmbatch_checkpoint":1,"settings":{}}` + "\n"
	const a = `{"k":"a","s":"d"}` + "\n"
	tests := []struct {
		name, file string
		line       int
	}{
		{"not json", h + a + "not json\n" + a, 3},
		{"empty line", h + "\n" + a, 2},
		{"no key", h + `{"s":"d"}` + "\n" + a, 2},
		{"no status", h + `{"k":"a"}` + "\n" + a, 2},
		{"key not a string", h + `{"k":1,"s":"d"}` + "\n" + a, 2},
		{"unknown status", h + `{"k":"a","s":"x"}` + "\n" + a, 2},
		{"long status", h + `{"k":"a","s":"dd"}` + "\n" + a, 2},
		{"array", h + `["a","d"]` + "\n" + a, 2},
		{"before a record without its newline", h + a + "garbage\n" + `{"k":"b","s":"d"}`, 3},
		{"NULs before a record", h + a + "\x00\x00\x00\n" + a, 3},
		{"torn record before a record", h + `{"k":"a","s` + "\n" + a + "\x00\x00", 2},
		{"garbage before a record in a NUL tail", h + "x\n\x00\n" + a + "\x00\x00\x00", 2},
		{"header not json", "{\"llmbatch_checkpoint\":\n" + a, 1},
		{"header without version", `{"llmbatch_checkpoint":null,"settings":{}}` + "\n", 1},
		{"header settings not strings", `{"llmbatch_checkpoint":1,"settings":{"t":0.5}}` + "\n", 1},
		{"other file, no newline", "hello", 1},
		{"other json", `{"id":"t-1","prompt":"hi"}` + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			writeFile(t, path, []byte(tt.file))
			j, err := checkpoint.Open(path, nil)
			if !isCorrupt(err, tt.line) {
				if err == nil {
					j.Close()
				}
				t.Fatalf("Open(%q) = %v, want a *CorruptError for line %d", tt.file, err, tt.line)
			}
			var ce *checkpoint.CorruptError
			if errors.As(err, &ce); ce.Path != path || ce.Err == nil {
				t.Errorf("Open() = %#v, want Path %q and a cause", ce, path)
			}
			if got := readFile(t, path); string(got) != tt.file {
				t.Errorf("refused Open changed the file to %q", got)
			}
		})
	}
}

func TestRecordsFromOtherWriters(t *testing.T) {
	// Valid JSON in another shape still replays: spaces, other field order, escapes encoding/json accepts.
	const file = `{"llmbatch_checkpoint":1,"settings":{}}` + "\n" +
		`{ "s" : "f", "k" : "a" }` + "\n" +
		`{"k":"\u0062\/","s":"d"}` + "\n" +
		`{"k":"\ud83d\ude00","s":"b"}` + "\n"
	path := tempPath(t)
	writeFile(t, path, []byte(file))
	j := open(t, path, nil)
	want := map[string]checkpoint.Status{"a": failed, "b/": done, "😀": bad}
	for k, st := range want {
		if got, ok := j.Status(k); got != st || !ok {
			t.Errorf("Status(%q) = %v, %v; want %v, true", k, got, ok, st)
		}
	}
}

// TestPowerLossTail opens journals whose unsynced end a power loss left as torn records and NUL bytes, and
// checks that Open cuts everything from the first line that is not a record, reports the cut, and appends
// records that read back.
func TestPowerLossTail(t *testing.T) {
	const h = `{"llmbatch_checkpoint":1,"settings":{}}` + "\n"
	const a = `{"k":"a","s":"d"}` + "\n"
	tests := []struct {
		name, file string
		keep       string // the file Open leaves
		done       int
	}{
		{"clean", h + a, h + a, 1},
		{"NULs", h + a + nuls(4096), h + a, 1},
		{"NULs after the header", h + nuls(100), h, 0},
		{"torn record then NULs", h + a + `{"k":"b","s` + nuls(300), h + a, 1},
		{"torn record, newline, NULs", h + a + `{"k":"b"` + "\n" + nuls(300), h + a, 1},
		{"lines of NULs", h + a + nuls(10) + "\n" + nuls(10) + "\n", h + a, 1},
		{"NULs then a torn record", h + a + nuls(10) + `{"k":"b","s":"d"` + "\n" + `{"k":"c"`, h + a, 1},
		{"invalid lines", h + a + "garbage\n" + `{"k":"b"`, h + a, 1},
		{"long NUL line", h + a + nuls(200_000) + "\n" + nuls(7), h + a, 1},
		{"only NULs", nuls(64), h, 0},
		{"torn header then NULs", `{"llmbatch_check` + nuls(64), h, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			writeFile(t, path, []byte(tt.file))
			j, err := checkpoint.Open(path, nil)
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			if d, f, b := j.Counts(); d != tt.done || f != 0 || b != 0 {
				t.Errorf("Counts() = %d, %d, %d; want %d, 0, 0", d, f, b, tt.done)
			}
			want := int64(len(tt.file)) // a torn header: the file started afresh
			if strings.HasPrefix(tt.file, tt.keep) {
				want -= int64(len(tt.keep))
			}
			if got := j.Repaired(); got != want {
				t.Errorf("Repaired() = %d, want %d", got, want)
			}
			if err := j.Append("after", done); err != nil {
				t.Fatalf("Append() = %v", err)
			}
			if err := j.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			after := tt.keep + `{"k":"after","s":"d"}` + "\n"
			if got := string(readFile(t, path)); got != after {
				t.Fatalf("after Open and Append the file holds %q, want %q", got, after)
			}
			j = open(t, path, nil)
			if d, _, _ := j.Counts(); d != tt.done+1 || j.Repaired() != 0 {
				t.Errorf("reopened: Counts() done = %d, Repaired() = %d; want %d, 0", d, j.Repaired(), tt.done+1)
			}
		})
	}
}
