package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// hostCmd runs this test binary as `pmcp args...` the way hosts start
// commands: with an empty environment (env -i; no HOME, no PATH, no
// XDG_*), only what makes the binary act as pmcp.
func hostCmd(args ...string) *exec.Cmd {
	cmd := selfCmd(args...)
	cmd.Env = cmd.Env[len(os.Environ()):] // only what selfCmd adds
	return cmd
}

// runHost runs cmd to its end and returns its exit code and output.
func runHost(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// serveOn serves h on ln until the test ends; the returned func kills the
// server at once (listener and connections), as a crash would.
func serveOn(t *testing.T, ln net.Listener, h http.Handler) (kill func()) {
	t.Helper()
	hs := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); <-served })
	return func() { _ = hs.Close() }
}

// TestTimeoutBoundsStdioChild: --timeout bounds the whole command for a
// stdio server that never answers, also one behind sh -c (whose own child
// holds the pipes): the command ends at the timeout, the child's process
// group is gone, and the message says once what timed out.
func TestTimeoutBoundsStdioChild(t *testing.T) {
	for _, c := range []struct {
		name, what string
		args, tail []string
	}{
		{"direct", "connect", []string{"call", "add"}, []string{"/bin/sleep", "60"}},
		{"sh -c", "connect", []string{"call", "add"}, []string{"/bin/sh", "-c", "/bin/sleep 60; :"}},
		// A server that answers the handshake, then not the call.
		{"call", "tools/call", []string{"call", "slow_compute", "seconds=60"}, []string{os.Args[0], "serve", "--stdio", "--log-level", "off"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The pipe's write end is inherited down to the sleep (exec
			// does not close inherited descriptors): EOF on the read end
			// means every process of the server is gone.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd := hostCmd(append(append(c.args, "--timeout", "1s", "--"), c.tail...)...)
			cmd.ExtraFiles = []*os.File{w}
			began := time.Now()
			code, _, errs := runHost(t, cmd)
			took := time.Since(began)
			w.Close()
			if code != exitConn {
				t.Errorf("exit %d, want %d", code, exitConn)
			}
			// The polite shutdown alone (stdin EOF, then SIGTERM) takes
			// 5 s; the timeout is 1 s.
			if took > 4*time.Second {
				t.Errorf("took %v with --timeout 1s", took)
			}
			oneLine(t, "timeout", errs)
			if !strings.Contains(errs, c.what+": timed out after 1s (--timeout)") || strings.Count(errs, "connect") > 1 || strings.Contains(errs, "deadline exceeded") {
				t.Errorf("message: %q", errs)
			}
			gone := make(chan struct{})
			go func() { _, _ = io.Copy(io.Discard, r); close(gone) }()
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				r.Close()
				<-gone
				t.Error("the server's processes outlived the command")
			}
		})
	}
}

// TestEmptyEnvironment: with no HOME, XDG_CONFIG_HOME or
// PMCP_TOKEN_STORE (env -i, as hosts start commands) the client
// commands and the bridge work against a server that needs no
// authorization: the token store is needed only to keep a token.
func TestEmptyEnvironment(t *testing.T) {
	url := everythingURL(t)
	for _, args := range [][]string{
		{"call", "add", "a=1", "b=2", "--url", url},
		{"inspect", "--url", url},
		{"tools", "list", "--era", "legacy", "--url", url},
		// stdin is empty: the bridge serves until its EOF.
		{"bridge", "--url", url},
	} {
		code, out, errs := runHost(t, hostCmd(args...))
		if code != exitOK {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, errs)
		}
	}
}
