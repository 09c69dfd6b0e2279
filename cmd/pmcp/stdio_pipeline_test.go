package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// readmePipe is the legacy session of README "Try it over stdio": the
// requests are written at once, without waiting for the initialize reply.
var readmePipe = strings.Join([]string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`,
}, "\n") + "\n"

// TestStdioReadmePipeline runs the README's pipelined legacy session 50
// times through `pmcp serve --stdio` in process (run, as main calls it)
// and 3 times against the binary itself: initialize must be finished
// before the tools/call behind it is dispatched, every time.
func TestStdioReadmePipeline(t *testing.T) {
	for i := range 50 {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"serve", "--stdio"}, strings.NewReader(readmePipe), &stdout, &stderr); code != exitOK {
			t.Fatalf("run %d: exit %d; stderr:\n%s", i, code, stderr.String())
		}
		checkReadmePipe(t, i, stdout.String())
	}
	for i := range 3 {
		cmd := exec.Command(os.Args[0], "serve", "--stdio")
		cmd.Env = append(os.Environ(), "PMCP_TEST_RUN_MAIN=1")
		cmd.Stdin = strings.NewReader(readmePipe)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("binary run %d: %v; stderr:\n%s", i, err, stderr.String())
		}
		checkReadmePipe(t, i, stdout.String())
	}
}

func checkReadmePipe(t *testing.T, run int, out string) {
	t.Helper()
	byID := map[string]frame{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f frame
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("run %d: non-JSON line %q", run, line)
		}
		f.raw = line
		byID[string(f.ID)] = f
	}
	if f := byID["1"]; f.Error != nil || f.Result["protocolVersion"] != "2025-11-25" {
		t.Fatalf("run %d: initialize: %s", run, f.raw)
	}
	f := byID["2"]
	if f.Error != nil || f.Result == nil || f.Result["isError"] == true || !strings.Contains(f.raw, `"sum":5`) {
		t.Fatalf("run %d: tools/call overtook initialize or failed: %s", run, f.raw)
	}
}
