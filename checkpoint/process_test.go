package checkpoint_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/llmbatch/llmbatch/checkpoint"
)

// helperEnv names the environment variable that turns a run of the test binary into a helper process.
// Its value is the path of the journal the helper works on.
const helperEnv = "CHECKPOINT_TEST_HELPER_PATH"

// startHelper starts the test binary running only the test named test, as a helper process working on
// path, and returns it with its standard input and output. The process is killed when the test ends.
func startHelper(t *testing.T, test, path string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(stdout)
}

// readLine reads one line the helper printed.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading from the helper process: %v (read %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// TestHelperLock is not a test: run by TestLockHeldByOtherProcess as a child process, it opens the journal,
// appends a record, says "ready" and holds the lock until it is killed.
func TestHelperLock(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestLockHeldByOtherProcess")
	}
	j, err := checkpoint.Open(path, nil)
	if err == nil {
		err = j.Append("child", checkpoint.Done)
	}
	if err == nil {
		err = j.Sync()
	}
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin) // until killed
	os.Exit(0)
}

func TestLockHeldByOtherProcess(t *testing.T) {
	path := tempPath(t)
	cmd, _, out := startHelper(t, "TestHelperLock", path)
	if got := readLine(t, out); got != "ready" {
		t.Fatalf("helper said %q, want ready", got)
	}

	_, err := checkpoint.Open(path, nil)
	if !errors.Is(err, checkpoint.ErrLocked) {
		t.Fatalf("Open() while another process holds the journal = %v, want ErrLocked", err)
	}
	if locked, err := checkpoint.Locked(path); !locked || err != nil {
		t.Errorf("Locked() while another process holds the journal = %v, %v; want true, nil", locked, err)
	}
	if s, err := checkpoint.Load(path); err != nil {
		t.Errorf("Load() while another process holds the journal = %v", err)
	} else if st, _ := s.Status("child"); st != checkpoint.Done {
		t.Errorf("Load().Status(child) = %v, want done", st)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: the child gets no chance to clean up
		t.Fatal(err)
	}
	cmd.Wait()
	if locked, err := checkpoint.Locked(path); locked || err != nil {
		t.Errorf("Locked() after the holder died = %v, %v; want false, nil", locked, err)
	}
	j := open(t, path, nil)
	if st, ok := j.Status("child"); st != checkpoint.Done || !ok {
		t.Errorf("Status(child) after the child died = %v, %v; want done, true", st, ok)
	}
}
