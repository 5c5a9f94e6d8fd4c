package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// readSource reads input through a source with no earlier run, and returns
// what it hands on: "id" for an item, "!line" for a rejected line.
func readSource(t *testing.T, input string, maxLine int) ([]string, []*Item, *Counters) {
	t.Helper()
	cfg := Config{Input: strings.NewReader(input), MaxLineBytes: maxLine, Counters: &Counters{}}
	src := newSource(&cfg, cfg.Input, &recordShaper{model: "m"}, nil)
	defer src.close()
	var got []string
	var items []*Item
	for {
		it, err := src.next(t.Context())
		if err == io.EOF {
			return got, items, cfg.Counters
		} else if err != nil {
			t.Fatalf("next() error = %v", err)
		}
		items = append(items, it)
		if it.rejected != nil {
			got = append(got, "!"+it.rejected.Error())
		} else {
			got = append(got, it.ID)
		}
	}
}

func TestSource(t *testing.T) {
	long := `{"id":"big","prompt":"` + strings.Repeat("x", 300<<10) + `"}` // over any 64 KiB scanner
	tests := []struct {
		name      string
		input     string
		max       int
		want      []string
		read, bad int64
	}{
		{"records", "{\"id\":\"a\",\"prompt\":\"p\"}\r\n{\"id\":2,\"prompt\":\"q\"}", 1 << 20, []string{"a", "2"}, 2, 0},
		{"BOM on line 1", "\xef\xbb\xbf{\"id\":\"a\",\"prompt\":\"p\"}\n", 1 << 20, []string{"a"}, 1, 0},
		{"blank lines pass", "\n \t\r\n{\"id\":\"a\",\"prompt\":\"p\"}\n\n", 1 << 20, []string{"a"}, 1, 0},
		{"long line", long + "\n", 1 << 20, []string{"big"}, 1, 0},
		{"too long, then more", long + "\n{\"id\":\"a\",\"prompt\":\"p\"}\n", 1 << 10,
			[]string{"!line 1: line too long: over 1024 bytes", "a"}, 2, 1},
		{"bad and duplicate lines carry their number", "{\"id\":\"a\",\"prompt\":\"p\"}\nnope\n{\"id\":\"a\",\"prompt\":\"p\"}\n", 1 << 20,
			[]string{"a", "!line 2: not a JSON object: invalid character 'o' in literal null (expecting 'u')", "!line 3: duplicate id"}, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, c := readSource(t, tt.input, tt.max)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("source read %q, want %q", got, tt.want)
			}
			if c.Read.Load() != tt.read || c.Bad.Load() != tt.bad {
				t.Errorf("counted %d read, %d bad; want %d, %d", c.Read.Load(), c.Bad.Load(), tt.read, tt.bad)
			}
		})
	}
}

func TestSourceTooLongIsNotKept(t *testing.T) {
	_, items, _ := readSource(t, strings.Repeat("y", 5<<20)+"\n", 1<<10)
	if len(items) != 1 || !errors.Is(items[0].rejected, ErrTooLong) || items[0].Line != 1 {
		t.Fatalf("items = %v, want line 1 rejected with ErrTooLong", items)
	}
}

// TestEstimateCountsEarlierRejections: the dry run reads through the run's
// own source, so it knows which rejected lines an earlier run recorded
// already, and which of them have been fixed since.
func TestEstimateCountsEarlierRejections(t *testing.T) {
	j := newJob(t, mock.New(mock.Config{}), `{"id":"a","prompt":"one"}`, `not json`, `{"id":"c"}`, `{"id":"d","prompt":"four"}`)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	// Line 2 fixed; line 3 still bad; a new bad line 5 and a new item 6.
	in := strings.Join([]string{`{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`, `{"id":"c"}`,
		`{"id":"d","prompt":"four"}`, `{`, `{"id":"f","prompt":"six"}`}, "\n") + "\n"
	if err := os.WriteFile(j.input, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := EstimateRun(t.Context(), j.config())
	if err != nil {
		t.Fatal(err)
	}
	got := [...]int64{e.Items, e.Bad, e.BadEarlier, e.Fixed, e.DoneEarlier, e.ToSend, e.Requests}
	if want := [...]int64{6, 2, 1, 1, 2, 2, 2}; got != want {
		t.Errorf("EstimateRun items, bad, bad earlier, fixed, done earlier, to send, requests = %v, want %v", got, want)
	}
	// The run agrees: it sends b and f, and writes only line 5 as newly rejected.
	sum, err := j.run()
	if err != nil || sum.Read != e.Items || sum.Bad != e.Bad || sum.Skipped != e.DoneEarlier || sum.Done != e.ToSend {
		t.Errorf("run after the estimate: %+v, %v; want the estimate's counts %+v", sum, err, *e)
	}
}

// FuzzReader: any bytes → no panic, line numbers rise, every accepted
// record has an id.
func FuzzReader(f *testing.F) {
	for _, s := range []string{"", "a\n", "\xef\xbb\xbf{\"id\":1}\r\n\n{", strings.Repeat("z", 3000) + "\nq",
		"{\"id\":\"x\",\"prompt\":\"p\"}\n{\"id\":\"x\",\"prompt\":\"p\"}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Config{Input: bytes.NewReader(data), MaxLineBytes: 1024, Counters: &Counters{}}
		src := newSource(&cfg, cfg.Input, &recordShaper{model: "m"}, nil)
		defer src.close()
		last := 0
		for {
			it, err := src.next(t.Context())
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if it.Line <= last {
				t.Fatalf("line numbers must rise: %d after %d", it.Line, last)
			}
			last = it.Line
			if it.rejected == nil && it.ID == "" {
				t.Fatalf("line %d accepted without an id", it.Line)
			}
		}
	})
}

// TestEstimateCountsUnjournaledLines: a run killed after it wrote result
// and errors lines to the OS but before it journaled them leaves lines the
// journal lacks. The next run's recovery records them and skips their
// items, and so does the dry run: it judges the files through the same
// reconciler, so it says what the rerun sends.
func TestEstimateCountsUnjournaledLines(t *testing.T) {
	all := prompts(10)
	j := newJob(t, mock.New(mock.Config{}), all[:4]...)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	// As a killed run leaves them: k4, k5 answered and k6 failed, written
	// but not journaled; a torn last line, which recovery cuts off.
	f, err := os.OpenFile(j.out(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, `{"id":"k4","output":"x"}`+"\n"+`{"id":"k5","output":"y"}`+"\n"+`{"id":"k7","out`)
	f.Close()
	if err := os.WriteFile(ErrorsPath(j.out()), []byte(`{"id":"k6","line":7,"error":{"kind":"bad_request","message":"no"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.input, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := EstimateRun(t.Context(), j.config())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := [...]int64{e.Items, e.DoneEarlier, e.FailedBefore, e.ToSend}, [...]int64{10, 6, 1, 3}; got != want {
		t.Errorf("EstimateRun items, done earlier, failed before, to send = %v, want %v", got, want)
	}
	sum, err := j.run()
	if err != nil || sum.Done != e.ToSend || sum.Skipped != e.DoneEarlier || sum.SkippedFailed != e.FailedBefore {
		t.Errorf("run after the estimate: %+v, %v; want the estimate's counts %+v", sum, err, *e)
	}
}
