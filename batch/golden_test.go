package batch

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/llm/mock"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden runs testdata/mixed.jsonl against the mock and compares the
// results and errors files, sorted and with time-dependent fields masked,
// to testdata/mixed.*.golden.
func TestGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/mixed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, mock.New(mock.Config{}), strings.TrimSuffix(string(in), "\n"))
	if _, err := j.run(func(c *Config) { c.Concurrency = 1 }); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ path, golden string }{
		{j.out(), "testdata/mixed.out.golden"},
		{ErrorsPath(j.out()), "testdata/mixed.errors.golden"},
	} {
		got := normalise(t, f.path)
		if *update {
			if err := os.WriteFile(f.golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(f.golden)
		if err != nil {
			t.Fatalf("%v (run go test ./batch -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s", filepath.Base(f.path), f.golden, got, want)
		}
	}
}

var volatile = regexp.MustCompile(`"(created|id)":("chatcmpl-[^"]*"|\d+)`)

// normalise sorts a JSONL file's lines and masks the fields that change
// from run to run.
func normalise(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range ls {
		if !json.Valid([]byte(l)) {
			t.Fatalf("%s line %d is not JSON: %s", path, i+1, l)
		}
		ls[i] = volatile.ReplaceAllString(l, `"$1":"*"`)
	}
	sort.Strings(ls)
	return []byte(strings.Join(ls, "\n") + "\n")
}
