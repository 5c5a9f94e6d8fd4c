// Package redistest starts a real redis-server for tests: on a free
// loopback port, with no persistence, stopped by its pid when the test ends.
//
// Tests that need Redis call [Start]. Where redis-server is not installed
// the test is skipped with a note, unless LLMBATCH_REQUIRE_REDIS=1 (set by
// .ci/run, which installs it), where it fails instead: CI never skips.
package redistest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A Server is a running redis-server started by [Start].
type Server struct {
	Addr string // host:port on loopback
	cmd  *exec.Cmd
	args []string
	t    testing.TB
}

// URL returns the redis:// URL of the server, with password pw when not "".
func (s *Server) URL(pw string) string {
	if pw == "" {
		return "redis://" + s.Addr + "/0"
	}
	return "redis://:" + pw + "@" + s.Addr + "/0"
}

// Start starts redis-server on a free loopback port with the extra
// configuration args (such as "--requirepass", "pw"); it is stopped when the
// test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("LLMBATCH_REQUIRE_REDIS") == "1" {
			t.Fatalf("redistest: redis-server not found (LLMBATCH_REQUIRE_REDIS=1): %v", err)
		}
		t.Skip("redistest: redis-server not installed (apt-get install redis-server; .ci/run installs it)")
	}
	s := &Server{t: t, args: append([]string{bin}, args...)}
	s.Addr = freeAddr(t)
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the server by its pid and waits for it to end. Stop on a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same address, after [Server.Stop].
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	dir := s.t.TempDir()
	args := append([]string{"--port", port, "--bind", host, "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}, s.args[1:]...)
	cmd := exec.Command(s.args[0], args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			s.Stop()
			s.t.Fatalf("redistest: redis-server did not listen on %s in 10s: %v\n%s", s.Addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: no free port: %v", err)
	}
	defer l.Close()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}
