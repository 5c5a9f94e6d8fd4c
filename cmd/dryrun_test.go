package cmd

import (
	"os"
	"strings"
	"testing"
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
