package cmd

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/batch"
)

// TestDryRunAfterRejections: after a run rejected lines, the dry run says
// which rejections are recorded already and which lines were fixed since.
func TestDryRunAfterRejections(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"one"}`, `not json`, `{"id":"c"}`)
	if code, _, stderr := execute(t, nil, "run", "--provider", "mock", in); code != exitFailedItems {
		t.Fatalf("first run: exit %d, want %d\n%s", code, exitFailedItems, stderr)
	}
	fixed := `{"id":"a","prompt":"one"}` + "\n" + `{"id":"b","prompt":"two"}` + "\n" + `{"id":"c"}` + "\n"
	if err := os.WriteFile(in, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, nil, "run", "--provider", "mock", "--dry-run", in)
	if code != exitOK {
		t.Fatalf("dry run: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"(1 bad lines, 1 done earlier, 0 failed earlier)",
		"rejected earlier: 1 bad lines already in the errors file (not written again); 1 fixed since", "to send:          1 items"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run says:\n%s\nwant %q", stdout, want)
		}
	}
}

// TestDryRunCountsTokensAsTheRun: for the same flags, the dry run's token
// figure is the one the run paces with: both build their batch config in
// buildConfigs, and the items' token estimates (made once as each is read,
// by Config.Count) of the run's config and the dry run's agree.
func TestDryRunCountsTokensAsTheRun(t *testing.T) {
	in := writeInput(t, `{"id":"a","prompt":"The quick brown fox jumps over the lazy dog, twice over."}`,
		`{"id":"b","prompt":"Ünïcödé and 数字 1234567890 !!! ??? ... tokens split oddly"}`)
	for _, flags := range []string{"", "--merge", "--tpm 100000", "--merge --tpm 100000"} {
		t.Run("flags="+flags, func(t *testing.T) {
			ios, _, _, _ := Test()
			var opts *RunOptions
			c := NewCmdRun(&Factory{IO: ios, Getenv: func(string) string { return "" }}, func(_ context.Context, o *RunOptions) error { opts = o; return nil })
			c.SetArgs(append(strings.Fields(flags), "--provider", "mock", in))
			if err := c.Execute(); err != nil {
				t.Fatal(err)
			}
			tokens := map[bool]int64{}
			for _, dry := range []bool{false, true} {
				opts.DryRun = dry
				f, err := os.Open(in)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				rc, err := buildConfigs(opts, f, endpoint{}, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				e, err := batch.EstimateRun(t.Context(), rc.batch)
				if err != nil {
					t.Fatal(err)
				}
				tokens[dry] = e.Tokens
			}
			if tokens[true] != tokens[false] {
				t.Errorf("with %q the dry run counts %d tokens, the run %d; want the same", flags, tokens[true], tokens[false])
			}
		})
	}
}
