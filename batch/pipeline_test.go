package batch

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/llm/mock"
)

// TestRunWritesAnswersBeforeCommit: an answer reaches the results file (the
// OS) as it arrives, not at the next commit: with commits an hour apart, the
// first item's line is in the file before the second is answered, so a kill
// of the process then would lose only the request in flight.
func TestRunWritesAnswersBeforeCommit(t *testing.T) {
	h := mock.New(mock.Config{})
	var out string
	var seen atomic.Bool
	srv := newCounting(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := readAllString(r)
		r.Body = readCloser{strings.NewReader(body)}
		if strings.Contains(body, "item 1") {
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if b, _ := os.ReadFile(out); bytes.Contains(b, []byte(`"k0"`)) {
					seen.Store(true)
					break
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	j := newJob(t, srv, prompts(2)...)
	out = j.out()
	sum, err := j.run(func(c *Config) { c.Concurrency, c.SyncEvery = 1, time.Hour })
	if err != nil || sum.Done != 2 {
		t.Fatalf("Run() = %+v, %v; want 2 done", sum, err)
	}
	if !seen.Load() {
		t.Error("the first answer was not in the results file while the second request waited")
	}
}
