package scripts

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// freePort runs free-port.sh with args and returns its port, or its exit
// status when it fails.
func freePort(t *testing.T, args ...string) (int, int) {
	t.Helper()
	out, err := exec.Command("./free-port.sh", args...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return 0, ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("free-port.sh printed %q", out)
	}
	return p, 0
}

// listen occupies a loopback port.
func listen(t *testing.T, port int) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestFreePortPicksAFreeLoopbackPort checks the port picker of
// conformance.sh and test.sh: a port in its range that a server can bind,
// never one something listens on, and a failure when nothing is free.
func TestFreePortPicksAFreeLoopbackPort(t *testing.T) {
	p, code := freePort(t)
	if code != 0 || p < 20000 || p > 32767 {
		t.Fatalf("default range: port %d, exit %d", p, code)
	}
	listen(t, p) // bindable

	// A range of two ports, one busy: always the other one.
	busy := listen(t, 0).Addr().(*net.TCPAddr).Port // ephemeral: > 1024
	lo, hi := busy-1, busy
	for range 10 {
		p, code := freePort(t, strconv.Itoa(lo), strconv.Itoa(hi))
		if code != 0 || p == busy || p < lo || p > hi {
			t.Fatalf("range %d-%d with %d busy: port %d, exit %d", lo, hi, busy, p, code)
		}
	}
	if _, code := freePort(t, strconv.Itoa(busy), strconv.Itoa(busy)); code != 1 {
		t.Fatalf("only a busy port: exit %d, want 1", code)
	}
	if _, code := freePort(t, "9", "8"); code != 2 {
		t.Fatalf("bad range: exit %d, want 2", code)
	}
}
