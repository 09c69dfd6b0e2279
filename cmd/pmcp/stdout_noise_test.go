package main

import (
	"os"
	"strings"
	"testing"
)

// TestStdioServerWritesNonJSON: a stdio server that prints to stdout what
// is not JSON-RPC is told so, with the first such line quoted (bounded)
// and where servers log: when the connection fails because of it, in the
// error; when the server answers anyway, in a warning. (The children
// keep stdin open: one that exits at once may break the pipe before its
// output is read, and then there is no line to quote.)
func TestStdioServerWritesNonJSON(t *testing.T) {
	t.Run("fails", func(t *testing.T) {
		code, _, errs := cli(t, "inspect", "--timeout", "2s", "--", "sh", "-c", "echo 'Server listening on port 3000'; echo 'second line'; exec cat >/dev/null")
		if code != exitConn {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if !strings.Contains(errs, `"Server listening on port 3000"`) || !strings.Contains(errs, "stderr") || strings.Contains(errs, "second line") {
			t.Errorf("the first bad line is not quoted with the fix:\n%s", errs)
		}
	})
	t.Run("answers anyway", func(t *testing.T) {
		code, out, errs := cli(t, "tools", "list", "--", "sh", "-c", "echo 'starting up'; exec env PMCP_TEST_RUN_MAIN=1 \"$0\" serve --stdio --log-level off", os.Args[0])
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if !strings.Contains(out, "echo") {
			t.Errorf("no tools listed:\n%s", out)
		}
		if !strings.Contains(errs, `"starting up"`) || !strings.Contains(errs, "stderr") {
			t.Errorf("no warning quoting the line:\n%s", errs)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		_, _, errs := cli(t, "inspect", "--timeout", "2s", "--", "sh", "-c", "printf 'x%.0s' $(seq 1 5000); echo; exec cat >/dev/null")
		if strings.Contains(errs, strings.Repeat("x", 1000)) || !strings.Contains(errs, "xxxx") {
			t.Errorf("the quoted line is not bounded:\n%.2000s", errs)
		}
	})
}
