package examples_test

import (
	"strings"
	"testing"
)

// The comparison server answers in the modern era too (interop's
// TestShortestServers runs it, and its go-sdk and mcp-go twins, in the
// legacy era), and a listen error on -http is reported: exit status 1 and
// the error on stderr.
func TestShortest(t *testing.T) {
	bin := build(t, "shortest")
	cmd, in, out, stderr := start(t, bin)
	r := send(t, in, out, 1, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},`+modernMeta+`}}`)
	if r.Result.IsError || r.Result.StructuredContent["greeting"] != "Hello, Ada!" {
		t.Fatalf("modern greet: %s", r.Raw)
	}
	r = send(t, in, out, 2, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"info://about",`+modernMeta+`}}`)
	if !strings.Contains(string(r.Raw), `"text":"A tiny MCP server."`) {
		t.Fatalf("modern resources/read: %s", r.Raw)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
		t.Fatalf("shortest at the end of stdin: %v (stderr %q)", err, stderr)
	}

	cmd, _, _, stderr = start(t, bin, "-http", "127.0.0.1:notaport")
	if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "listen tcp") {
		t.Fatalf("shortest -http with a bad address: %v (stderr %q); want exit status 1 and the listen error", err, stderr)
	}
}
