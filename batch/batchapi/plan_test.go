package batchapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlannerLineBytes(t *testing.T) {
	dir := t.TempDir()
	p := NewPlanner(PlanConfig{Dir: dir})
	body := "{\n  \"model\": \"m\",\n  \"messages\": [{\"role\": \"user\", \"content\": \"a<b\"}]\n}"
	if plan, err := p.Add(Line{ID: "id-1", Body: []byte(body), Tokens: 7}); plan != nil || err != nil {
		t.Fatalf("Add = %v, %v; want nil, nil", plan, err)
	}
	plan, err := p.Flush()
	if err != nil || plan == nil {
		t.Fatalf("Flush = %v, %v", plan, err)
	}
	want := `{"custom_id":"id-1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"a\u003cb"}]}}` + "\n"
	got, err := os.ReadFile(plan.Path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("shard file =\n%s\nwant\n%s", got, want)
	}
	sum := sha256.Sum256(got)
	wantPlan := Plan{N: 1, Path: filepath.Join(dir, FileName(1, hex.EncodeToString(sum[:]))), Hash: hex.EncodeToString(sum[:]),
		Lines: 1, Bytes: int64(len(want)), Tokens: 7}
	if *plan != wantPlan {
		t.Errorf("Flush() = %+v, want %+v", *plan, wantPlan)
	}
}

// lines returns n lines whose batch lines are each exactly size bytes.
func lines(t *testing.T, n, size int) []Line {
	t.Helper()
	var out []Line
	for i := range n {
		id := fmt.Sprintf("item-%05d", i)
		fixed := len(`{"custom_id":"","method":"POST","url":"/v1/chat/completions","body":{"p":""}}`+"\n") + len(id)
		if size < fixed {
			t.Fatalf("lines of %d bytes cannot hold the envelope (%d)", size, fixed)
		}
		out = append(out, Line{ID: id, Body: []byte(`{"p":"` + strings.Repeat("x", size-fixed) + `"}`), Tokens: 1})
	}
	return out
}

func TestPlannerCuts(t *testing.T) {
	tests := []struct {
		name      string
		cfg       PlanConfig
		n, size   int
		wantLines []int
	}{
		{"by requests", PlanConfig{MaxRequests: 4, MaxBytes: 1 << 20}, 10, 200, []int{4, 4, 2}},
		{"exactly full", PlanConfig{MaxRequests: 5}, 10, 200, []int{5, 5}},
		// 95% of 2000 is 1900: 9 lines of 200 bytes fit, a 10th would not.
		{"by bytes, 95% of the limit", PlanConfig{MaxBytes: 2000}, 20, 200, []int{9, 9, 2}},
		{"a line at the byte limit exactly", PlanConfig{MaxBytes: 2000}, 3, 1900, []int{1, 1, 1}},
		{"one line per shard", PlanConfig{MaxRequests: 1}, 3, 150, []int{1, 1, 1}},
		{"numbers from First", PlanConfig{MaxRequests: 2, First: 8, Round: 1}, 3, 150, []int{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dir = t.TempDir()
			in := lines(t, tt.n, tt.size)
			plans := planAll(t, tt.cfg, in)
			var got []int
			for _, pl := range plans {
				got = append(got, pl.Lines)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantLines) {
				t.Fatalf("shard sizes = %v, want %v", got, tt.wantLines)
			}
			checkPlans(t, tt.cfg, plans, in)
		})
	}
}

func planAll(t *testing.T, cfg PlanConfig, in []Line) []Plan {
	t.Helper()
	p := NewPlanner(cfg)
	defer p.Close()
	var plans []Plan
	for _, l := range in {
		pl, err := p.Add(l)
		if err != nil {
			t.Fatalf("Add(%s) = %v", l.ID, err)
		}
		if pl != nil {
			plans = append(plans, *pl)
		}
	}
	pl, err := p.Flush()
	if err != nil {
		t.Fatalf("Flush() = %v", err)
	}
	if pl != nil {
		plans = append(plans, *pl)
	}
	return plans
}

// checkPlans checks each plan against its file: size, hash, limits,
// numbering, and that the files hold the input's ids in order.
func checkPlans(t *testing.T, cfg PlanConfig, plans []Plan, in []Line) {
	t.Helper()
	p := NewPlanner(cfg) // for the defaults
	var ids []string
	for i, pl := range plans {
		data, err := os.ReadFile(pl.Path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		switch {
		case int64(len(data)) != pl.Bytes || hex.EncodeToString(sum[:]) != pl.Hash:
			t.Errorf("shard %d: file of %d bytes, hash %x; plan says %d, %s", pl.N, len(data), sum, pl.Bytes, pl.Hash)
		case pl.Bytes > p.Limit() || pl.Lines > p.cfg.MaxRequests:
			t.Errorf("shard %d: %d lines, %d bytes: over the limits %d, %d", pl.N, pl.Lines, pl.Bytes, p.cfg.MaxRequests, p.Limit())
		case pl.N != p.cfg.First+i || pl.Round != cfg.Round:
			t.Errorf("shard %d (round %d) is the %d-th plan; want number %d, round %d", pl.N, pl.Round, i, p.cfg.First+i, cfg.Round)
		case filepath.Base(pl.Path) != FileName(pl.N, pl.Hash):
			t.Errorf("shard %d is at %s, want %s", pl.N, pl.Path, FileName(pl.N, pl.Hash))
		}
		n := 0
		if err := ReadLines(bytes.NewReader(data), 0, func(l Line) error { ids = append(ids, l.ID); n++; return nil }); err != nil {
			t.Fatalf("ReadLines(shard %d) = %v", pl.N, err)
		}
		if n != pl.Lines {
			t.Errorf("shard %d holds %d lines, plan says %d", pl.N, n, pl.Lines)
		}
	}
	var want []string
	for _, l := range in {
		want = append(want, l.ID)
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("the shards hold %v, want %v", ids, want)
	}
	if tmp, _ := filepath.Glob(filepath.Join(cfg.Dir, ".shard-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestPlannerItemErrors(t *testing.T) {
	p := NewPlanner(PlanConfig{MaxBytes: 1000, Dir: t.TempDir()})
	defer p.Close()
	big := lines(t, 1, 951)[0] // 95% of 1000 is 950
	tests := []struct {
		l    Line
		want error
	}{
		{big, ErrLineTooLarge},
		{Line{ID: "", Body: []byte(`{}`)}, ErrID},
		{Line{ID: "\x81", Body: []byte(`{}`)}, ErrID},
		{Line{ID: "a", Body: []byte(`[1]`)}, ErrBody},
		{Line{ID: "a", Body: []byte(`{"x":`)}, ErrBody},
		{Line{ID: "a", Body: nil}, ErrBody},
	}
	for _, tt := range tests {
		plan, err := p.Add(tt.l)
		var ie *ItemError
		if plan != nil || !errors.As(err, &ie) || !errors.Is(err, tt.want) || ie.ID != tt.l.ID {
			t.Errorf("Add(%.20q, %.20q) = %v, %v; want an *ItemError for %v", tt.l.ID, tt.l.Body, plan, err, tt.want)
		}
	}
	if _, err := p.Add(lines(t, 1, 950)[0]); err != nil { // the planner goes on
		t.Fatalf("Add after item errors = %v", err)
	}

	if pl, err := p.Flush(); err != nil || pl == nil || pl.Lines != 1 || pl.Bytes != 950 {
		t.Fatalf("Flush() = %+v, %v; want the one line that fits", pl, err)
	}
}

func TestPlannerDuplicateID(t *testing.T) {
	p := NewPlanner(PlanConfig{MaxRequests: 2})
	a := Line{ID: "a", Body: []byte(`{}`)}
	b := Line{ID: "b", Body: []byte(`{}`)}
	for i, tt := range []struct {
		l    Line
		cut  bool
		want error
	}{{a, false, nil}, {a, false, ErrDuplicateID}, {b, false, nil}, {a, true, nil}} { // the last starts shard 2
		pl, err := p.Add(tt.l)
		if (pl != nil) != tt.cut || !errors.Is(err, tt.want) {
			t.Errorf("Add #%d (%s) = %v, %v; want a cut %v, error %v", i, tt.l.ID, pl, err, tt.cut, tt.want)
		}
	}
}

func TestPlannerDryRun(t *testing.T) {
	in := lines(t, 7, 300)
	cfg := PlanConfig{MaxRequests: 3, Dir: t.TempDir()}
	onDisk := planAll(t, cfg, in)
	cfg.Dir = ""
	dry := planAll(t, cfg, in)
	if len(dry) != len(onDisk) {
		t.Fatalf("dry run: %d shards, on disk %d", len(dry), len(onDisk))
	}
	for i := range dry {
		if dry[i].Path != "" || dry[i].Hash != onDisk[i].Hash || dry[i].Bytes != onDisk[i].Bytes || dry[i].Tokens != int64(dry[i].Lines) {
			t.Errorf("dry shard %+v, on disk %+v: want the same but no path", dry[i], onDisk[i])
		}
	}
}

func TestPlannerCloseAndStickyError(t *testing.T) {
	dir := t.TempDir()
	p := NewPlanner(PlanConfig{Dir: dir})
	if _, err := p.Add(lines(t, 1, 200)[0]); err != nil {
		t.Fatal(err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".shard-*.tmp")); len(tmp) != 1 {
		t.Fatalf("while building: temporary files %v, want one", tmp)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("after Close: %v left, want nothing", left)
	}

	gone := filepath.Join(dir, "gone")
	p = NewPlanner(PlanConfig{Dir: gone})
	_, err := p.Add(lines(t, 1, 200)[0])
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Add into a missing dir = %v, want ErrNotExist", err)
	}
	os.Mkdir(gone, 0o700)
	if _, err2 := p.Add(lines(t, 1, 200)[0]); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Add after a failure = %v, want the same error again", err2)
	}
	if pl, err2 := p.Flush(); pl != nil || err2 == nil {
		t.Errorf("Flush after a failure = %v, %v, want the error", pl, err2)
	}
}

// FuzzPlanner: any ids and bodies, and any limits: no panic; every line is
// either refused with an *ItemError or in exactly one shard, in order, and
// no shard breaks a limit.
func FuzzPlanner(f *testing.F) {
	f.Add("a", []byte(`{"model":"m"}`), 2, 400)
	f.Add("b\n\"c", []byte("{\n\"x\": [1, 2,\n3]}"), 1, 120)
	f.Add("<&>", []byte(`{"s":"\u2028"}`), 3, 10_000)
	f.Fuzz(func(t *testing.T, id string, body []byte, maxReq, maxBytes int) {
		cfg := PlanConfig{MaxRequests: maxReq % 50, MaxBytes: int64(maxBytes % 100_000), Dir: t.TempDir()}
		var in []Line
		for i := range 5 { // the same body under five ids
			in = append(in, Line{ID: fmt.Sprintf("%s-%d", id, i), Body: body})
		}
		p := NewPlanner(cfg)
		var plans []Plan
		var kept []Line
		for _, l := range append(in, Line{ID: "tail", Body: []byte(`{}`)}) {
			pl, err := p.Add(l)
			var ie *ItemError
			if err != nil && !errors.As(err, &ie) {
				t.Fatalf("Add(%q) = %v", l.ID, err)
			}
			if err == nil {
				kept = append(kept, l)
			}
			if pl != nil {
				plans = append(plans, *pl)
			}
		}
		if pl, err := p.Flush(); err != nil {
			t.Fatal(err)
		} else if pl != nil {
			plans = append(plans, *pl)
		}
		checkPlans(t, cfg, plans, kept)
	})
}
