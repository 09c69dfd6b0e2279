package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostMarker precedes each host configuration block of the README.
var hostMarker = regexp.MustCompile(`^<!-- host: (\S+) -->$`)

// hostServersKey is where each host reads its servers from.
var hostServersKey = map[string]string{"claude-desktop": "mcpServers", "vscode": "servers", "cursor": "mcpServers"}

// hostEntry is one server of a host configuration, read as the hosts
// read it.
type hostEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// readmeHostConfigs returns the JSON block after each host marker.
func readmeHostConfigs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		m := hostMarker.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```json" {
			t.Fatalf("README.md:%d: a host marker is not followed by a ```json block", i+1)
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			t.Fatalf("README.md:%d: unterminated block", i+2)
		}
		configs[m[1]] = strings.Join(lines[i+2:i+2+end], "\n")
	}
	return configs
}

// TestHostConfigs runs every server of the README's Claude Desktop,
// VS Code and Cursor configurations the way those hosts start them: the
// command at its absolute path (here freshly built binaries), the args,
// an environment holding only the entry's env, another working directory;
// then initialize, notifications/initialized and tools/list as raw
// JSON-RPC lines over stdio. The remote entry bridges to a local server
// that requires OAuth, signed in to beforehand with pmcp login into the
// token store the entry names.
func TestHostConfigs(t *testing.T) {
	configs := readmeHostConfigs(t)
	if len(configs) != len(hostServersKey) {
		t.Fatalf("README.md has host blocks for %v, want %d (claude-desktop, vscode, cursor)", slices.Sorted(maps.Keys(configs)), len(hostServersKey))
	}
	pmcpBin := buildBinary(t, ".")
	myserver := buildBinary(t, "github.com/gopmcp/pmcp/examples/quickstart")

	as := newLoginAS(t)
	rs := newProtectedEverything(t, as)
	store := filepath.Join(t.TempDir(), "tokens.json")
	t.Setenv(tokenStoreEnv, store)
	t.Setenv(browserEnv, os.Args[0])
	t.Setenv("PMCP_TEST_BROWSER", "1")
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	if code, out, errs := cli(t, "login", "--url", rs.url); code != exitOK {
		t.Fatalf("pmcp login: exit %d\n%s%s", code, out, errs)
	}
	subst := strings.NewReplacer(
		"/absolute/path/to/pmcp", pmcpBin,
		"/absolute/path/to/myserver", myserver,
		"https://mcp.example.com/mcp", rs.url,
		"/Users/you/.config/pmcp/tokens.json", store,
	)

	for host, key := range hostServersKey {
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(configs[host]), &top); err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		var servers map[string]hostEntry
		if err := json.Unmarshal(top[key], &servers); err != nil || len(servers) != 3 {
			t.Fatalf("%s: %q holds %d servers (%v), want 3", host, key, len(servers), err)
		}
		for name, e := range servers {
			t.Run(host+"/"+name, func(t *testing.T) {
				if host == "vscode" && e.Type != "stdio" {
					t.Errorf("type %q, want stdio", e.Type)
				}
				command := subst.Replace(e.Command)
				if !filepath.IsAbs(command) {
					t.Fatalf("command %q is not an absolute path", e.Command)
				}
				args := make([]string, len(e.Args))
				for i, a := range e.Args {
					args[i] = subst.Replace(a)
				}
				env := []string{} // not nil: nothing is inherited
				for k, v := range e.Env {
					env = append(env, k+"="+subst.Replace(v))
				}
				hostSession(t, command, args, env)
			})
		}
	}
	if _, authorizes, _, _ := as.counts(); authorizes != 1 {
		t.Errorf("%d authorizations, want the one of pmcp login", authorizes)
	}
}

// hostSession starts command as a host does and talks to it as a host
// does: initialize (2025-11-25), the initialized notification, tools/list
// without params; then it closes stdin and expects a clean exit.
func hostSession(t *testing.T, command string, args, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	fail := func(format string, a ...any) {
		t.Helper()
		_ = stdin.Close()
		_ = cmd.Wait()
		t.Fatalf(format+"\nstderr:\n%s", append(a, stderr.String())...)
	}
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			fail("write: %v", err)
		}
	}
	// reply reads lines up to the response with this id (skipping
	// notifications and requests of the server).
	reply := func(id string) map[string]any {
		t.Helper()
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				fail("waiting for the reply %s: %v", id, err)
			}
			var f struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result map[string]any  `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &f); err != nil {
				fail("a line on stdout that is not JSON-RPC: %q", line)
			}
			if f.Method != "" || string(f.ID) != id {
				continue
			}
			if f.Error != nil || f.Result == nil {
				fail("reply %s: %s", id, line)
			}
			return f.Result
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"host","version":"1.0.0"}}}`)
	if v := reply("1")["protocolVersion"]; v != "2025-11-25" {
		fail("initialize: protocolVersion %v", v)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	tools, _ := reply("2")["tools"].([]any)
	var names []string
	for _, tool := range tools {
		if m, ok := tool.(map[string]any); ok {
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	if !slices.Contains(names, "add") {
		fail("tools/list has no add: %v", names)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", err, stderr.String())
	}
}
