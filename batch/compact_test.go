package batch

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// failingServer refuses every request with a 400 whose message counts the
// requests, so that each failure of an item reads differently.
func failingServer() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":"refusal %d"}}`, n.Add(1))
	})
}

// TestCompactKeepsTheLastFailure: an item that fails again when retried
// keeps one errors line, its last; a rejected input line keeps its one.
func TestCompactKeepsTheLastFailure(t *testing.T) {
	j := newJob(t, failingServer(), `{"id":"a","prompt":"one"}`, `not json`)
	for range 3 {
		if _, err := j.run(func(c *Config) { c.RetryFailed = true }); err != nil {
			t.Fatal(err)
		}
	}
	errs := lines(t, ErrorsPath(j.out()))
	if len(errs) != 2 {
		t.Fatalf("errors file holds %d lines, want 2 (a and line 2): %v", len(errs), errs)
	}
	for _, e := range errs {
		if e["id"] == "a" && e["error"].(map[string]any)["message"] != "refusal 3" {
			t.Errorf("errors line of a = %v, want the last failure, refusal 3", e)
		}
	}
}

// TestCompactDropsOnlyWhatTheJournalMovedPast: with one line per key and
// nothing answered since, compaction leaves the errors file as it is.
func TestCompactDropsOnlyWhatTheJournalMovedPast(t *testing.T) {
	j := newJob(t, failingServer(), `{"id":"a","prompt":"one"}`, `{"id":"b","prompt":"two"}`)
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(ErrorsPath(j.out()))
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to drop: the rerun sends nothing and leaves the file as it is.
	if _, err := j.run(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(ErrorsPath(j.out()))
	if string(after) != string(before) || strings.Count(string(after), "\n") != 2 {
		t.Errorf("errors file changed by a rerun with nothing to compact:\n%s\nwas\n%s", after, before)
	}
}
