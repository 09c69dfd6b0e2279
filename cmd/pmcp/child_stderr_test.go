package main

import (
	"os"
	"strings"
	"testing"
)

// TestChildStderrQuiet: a stdio server's stderr (the access log of pmcp
// serve --stdio, at its default level) does not clutter a client
// command's output; it is shown at --log-level debug, and when the
// server fails.
func TestChildStderrQuiet(t *testing.T) {
	child := []string{"--", "env", "PMCP_TEST_RUN_MAIN=1", os.Args[0], "serve", "--stdio"}
	code, out, errs := cli(t, append([]string{"inspect"}, child...)...)
	if code != exitOK || !strings.Contains(out, "echo") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(errs, "mcp request") {
		t.Errorf("the child's access log is on stderr:\n%s", errs)
	}

	_, _, errs = cli(t, append([]string{"tools", "list", "--log-level", "debug"}, child...)...)
	if !strings.Contains(errs, "mcp request") {
		t.Errorf("at debug the child's stderr is not shown:\n%s", errs)
	}

	code, _, errs = cli(t, "tools", "list", "--", "sh", "-c", "echo 'cannot open database' >&2; exit 3")
	if code != exitConn || !strings.Contains(errs, "cannot open database") {
		t.Errorf("exit %d; a failing child's stderr is not shown:\n%s", code, errs)
	}
}
