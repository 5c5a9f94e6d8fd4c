//go:build linux

package checkpoint_test

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// fsizeLimit is the file size limit the helper process runs under.
const fsizeLimit = 4096

// TestHelperFileTooLarge is not a test: run by TestWriteFailureInChild as a child process limited to
// files of fsizeLimit bytes, it appends and syncs until the journal fails, and prints
// "synced N appended M" with what it got away with, or "bad: ..." if the journal misbehaved.
func TestHelperFileTooLarge(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestWriteFailureInChild")
	}
	signal.Ignore(syscall.SIGXFSZ) // make the kernel fail the write with EFBIG instead of killing us
	lim := syscall.Rlimit{Cur: fsizeLimit, Max: fsizeLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Printf("bad: setrlimit: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(fillUntilError(path))
	os.Exit(0)
}

// fillUntilError appends records to the journal at path, syncing every 10, until one fails.
func fillUntilError(path string) string {
	j, err := checkpoint.Open(path, nil)
	if err != nil {
		return "bad: open: " + err.Error()
	}
	synced, appended := 0, 0
	for i := 0; i < 10*fsizeLimit; i++ {
		if err = j.Append(strconv.Itoa(i), checkpoint.Done); err != nil {
			break
		}
		appended++
		if appended%10 == 0 {
			if err = j.Sync(); err != nil {
				break
			}
			synced = appended
		}
	}
	switch {
	case err == nil:
		return "bad: no error past the file size limit"
	case !errors.Is(err, syscall.EFBIG):
		return "bad: error is not EFBIG: " + err.Error()
	case j.Append("more", checkpoint.Done) != err, j.Sync() != err, j.Close() != err:
		return "bad: the error did not stick: " + err.Error()
	}
	return fmt.Sprintf("synced %d appended %d", synced, appended)
}

func TestWriteFailureInChild(t *testing.T) {
	path := tempPath(t)
	write(t, path, nil) // just the header
	cmd, _, out := startHelper(t, "TestHelperFileTooLarge", path)
	line := readLine(t, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v (said %q)", err, line)
	}
	var synced, appended int
	if _, err := fmt.Sscanf(line, "synced %d appended %d", &synced, &appended); err != nil {
		t.Fatalf("helper said %q", line)
	}
	t.Logf("helper: %s", line)
	if synced == 0 || appended < synced {
		t.Fatalf("helper said %q: want some records synced before the limit", line)
	}

	// What reached the disk replays as a prefix of what was appended, holding at least what was synced.
	j := open(t, path, nil)
	d, _, _ := j.Counts()
	if d < synced || d > appended {
		t.Errorf("reopened journal has %d records; want %d to %d", d, synced, appended)
	}
	for i := range appended {
		if _, ok := j.Status(strconv.Itoa(i)); ok != (i < d) {
			t.Errorf("Status(%d) found = %v, want %v: not a prefix", i, ok, i < d)
		}
	}
	if err := j.Append("after", checkpoint.Done); err != nil {
		t.Errorf("Append() after reopening = %v", err)
	}
}
