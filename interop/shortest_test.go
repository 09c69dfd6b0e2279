package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shortestServers are the README's comparison server (examples/shortest)
// and the same server written with go-sdk and with mcp-go
// (interop/shortest/*), with the README table row of each.
var shortestServers = []struct {
	name, pkg, file, row string
}{
	{"pmcp", "github.com/gopmcp/pmcp/examples/shortest", "../examples/shortest/main.go",
		"| pmcp | [examples/shortest](examples/shortest/main.go) | %d |"},
	{"go-sdk", "./shortest/gosdk", "shortest/gosdk/main.go",
		"| go-sdk v1.8.0 | [interop/shortest/gosdk](interop/shortest/gosdk/main.go) | %d |"},
	{"mcp-go", "./shortest/mcpgo", "shortest/mcpgo/main.go",
		"| mcp-go v1.2.1 | [interop/shortest/mcpgo](interop/shortest/mcpgo/main.go) | %d |"},
}

// codeLines counts the lines of a gofmt'ed Go file that are neither blank
// nor only a comment: the README's rule for all three servers.
func codeLines(src []byte) int {
	n := 0
	for _, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}

// TestShortestServers keeps the README's line counts true (each row of its
// table is computed here, and pmcp's server is at most as long as
// go-sdk's), builds the three servers and runs each over stdio with raw
// JSON-RPC as a host sends it: initialize, tools/list, tools/call,
// resources/read, prompts/get, then end of stdin (exit status 0).
func TestShortestServers(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, s := range shortestServers {
		src, err := os.ReadFile(s.file)
		if err != nil {
			t.Fatal(err)
		}
		counts[s.name] = codeLines(src)
		if row := fmt.Sprintf(s.row, counts[s.name]); !bytes.Contains(readme, []byte("\n"+row+"\n")) {
			t.Errorf("README.md lacks the row %q (%s now has %d lines); update the table", row, s.file, counts[s.name])
		}
	}
	if counts["pmcp"] > counts["go-sdk"] {
		t.Errorf("examples/shortest has %d lines, go-sdk's server %d: pmcp's must not be longer", counts["pmcp"], counts["go-sdk"])
	}

	dir := t.TempDir()
	for _, s := range shortestServers {
		t.Run(s.name, func(t *testing.T) {
			bin := filepath.Join(dir, strings.ReplaceAll(s.name, "-", ""))
			build := exec.Command("go", "build", "-o", bin, s.pkg)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", s.pkg, err, out)
			}
			runShortest(t, bin)
		})
	}
}

func runShortest(t *testing.T, bin string) {
	t.Helper()
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
	}()
	defer func() {
		_ = stdin.Close()
		select {
		case err := <-exited:
			if err != nil && !t.Failed() {
				t.Errorf("exit after end of stdin: %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("still running 10 s after end of stdin; stderr:\n%s", stderr.String())
		}
		for range lines { // Wait closed stdout: the reader ends
		}
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// call sends a request and returns its result, skipping notifications.
	call := func(id int, method, params string) map[string]any {
		t.Helper()
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("%s: stdout closed; stderr:\n%s", method, stderr.String())
				}
				var m struct {
					ID     *int           `json:"id"`
					Result map[string]any `json:"result"`
					Error  any            `json:"error"`
				}
				if err := json.Unmarshal(l, &m); err != nil {
					t.Fatalf("%s: not JSON on stdout: %q", method, l)
				}
				if m.ID == nil {
					continue
				}
				if *m.ID != id || m.Error != nil || m.Result == nil {
					t.Fatalf("%s: got %s", method, l)
				}
				return m.Result
			case <-timeout:
				t.Fatalf("%s: no response in 10 s; stderr:\n%s", method, stderr.String())
			}
		}
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	init := call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}`)
	if js(init["serverInfo"]) == "null" || !strings.Contains(js(init["capabilities"]), "prompts") {
		t.Fatalf("initialize: %s", js(init))
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got := js(call(2, "tools/list", `{}`)); !strings.Contains(got, `"name":"add"`) || !strings.Contains(got, `"name":"greet"`) || !strings.Contains(got, `"outputSchema"`) {
		t.Fatalf("tools/list: %s", got)
	}
	if got := js(call(3, "tools/call", `{"name":"add","arguments":{"a":2,"b":40}}`)); !strings.Contains(got, `"structuredContent":{"sum":42}`) {
		t.Fatalf("tools/call add: %s", got)
	}
	if got := js(call(4, "tools/call", `{"name":"greet","arguments":{"name":"Ada"}}`)); !strings.Contains(got, `"greeting":"Hello, Ada!"`) {
		t.Fatalf("tools/call greet: %s", got)
	}
	if got := js(call(5, "resources/read", `{"uri":"info://about"}`)); !strings.Contains(got, `"text":"A tiny MCP server."`) {
		t.Fatalf("resources/read: %s", got)
	}
	if got := js(call(6, "prompts/get", `{"name":"review","arguments":{"code":"x := 1"}}`)); !strings.Contains(got, `Review this code:\nx := 1`) {
		t.Fatalf("prompts/get: %s", got)
	}
}
