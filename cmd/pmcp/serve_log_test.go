package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestServeAccessLog: `pmcp serve --stdio` writes one access record per
// request to stderr by default, as text or JSON; --log-level off writes
// none and bad values are usage errors.
func TestServeAccessLog(t *testing.T) {
	const req = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"
	serveOnce := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"serve", "--stdio"}, args...), strings.NewReader(req), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, stderr := serveOnce()
	if code != exitOK || !strings.Contains(out, `"id":1`) || !strings.Contains(stderr, `msg="mcp request" method=server/discover`) || !strings.Contains(stderr, "transport=stdio") {
		t.Fatalf("text: %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	code, _, stderr = serveOnce("--log-format", "json")
	var rec map[string]any
	if code != exitOK || json.Unmarshal([]byte(strings.TrimSpace(stderr)), &rec) != nil || rec["method"] != "server/discover" || rec["outcome"] != "ok" || rec["era"] != "modern" {
		t.Fatalf("json: %d %s", code, stderr)
	}
	if code, _, stderr = serveOnce("--log-level", "off"); code != exitOK || stderr != "" {
		t.Fatalf("off: %d %q", code, stderr)
	}
	if code, _, stderr = serveOnce("--log-level", "warn"); code != exitOK || stderr != "" {
		t.Fatalf("warn: %d %q", code, stderr)
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		if code, _, _ = serveOnce(bad...); code != exitUsage {
			t.Fatalf("%v: %d", bad, code)
		}
	}
}
