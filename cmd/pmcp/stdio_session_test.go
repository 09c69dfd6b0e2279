package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// proc is a `pmcp serve --stdio` child process driven line by line.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
}

func startStdio(t *testing.T, extraArgs ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--stdio"}, extraArgs...)...)
	cmd.Env = append(os.Environ(), "PMCP_TEST_RUN_MAIN=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024), stderr: new(bytes.Buffer)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		waitDone := make(chan error, 1)
		go func() { waitDone <- cmd.Wait() }()
		select {
		case <-waitDone:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-waitDone
			t.Errorf("pmcp did not exit after stdin closed")
		}
		<-readerDone
	})
	return p
}

func (p *proc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params map[string]any  `json:"params"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
}

// until reads frames until the response with the given id (as JSON text)
// arrives; it returns the notifications seen before it and the response.
func (p *proc) until(id string) ([]frame, frame) {
	p.t.Helper()
	var notes []frame
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("stdout closed waiting for id %s; stderr:\n%s", id, p.stderr)
			}
			var f frame
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				p.t.Fatalf("stdout carried a non-JSON line %q: %v", line, err)
			}
			f.raw = line
			if f.Method != "" && f.ID == nil {
				notes = append(notes, f)
				continue
			}
			if string(f.ID) == id {
				return notes, f
			}
			p.t.Fatalf("unexpected frame while waiting for %s: %s", id, line)
		case <-timeout:
			p.t.Fatalf("no response with id %s", id)
		}
	}
}

func (p *proc) call(id int, method, params string) ([]frame, frame) {
	p.t.Helper()
	if params == "" {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, method))
	} else {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	}
	return p.until(fmt.Sprint(id))
}

func count(notes []frame, method string) int {
	n := 0
	for _, f := range notes {
		if f.Method == method {
			n++
		}
	}
	return n
}

// TestStdioLegacySession: initialize → tools/list → tools/call with
// progress and logging.
func TestStdioLegacySession(t *testing.T) {
	p := startStdio(t)
	_, r := p.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}`)
	if r.Error != nil || r.Result["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize: %s", r.raw)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, r = p.call(2, "tools/list", "")
	tools, _ := r.Result["tools"].([]any)
	if len(tools) < 10 {
		t.Fatalf("tools/list: %s", r.raw)
	}
	for _, x := range tools {
		tool := x.(map[string]any)
		if tool["description"] == "" || tool["inputSchema"] == nil {
			t.Fatalf("tool without description or schema: %v", tool)
		}
	}
	if _, r = p.call(3, "logging/setLevel", `{"level":"debug"}`); r.Error != nil {
		t.Fatalf("setLevel: %s", r.raw)
	}
	notes, r := p.call(4, "tools/call", `{"name":"test_tool_with_progress","_meta":{"progressToken":"tok-1"}}`)
	if r.Error != nil || count(notes, "notifications/progress") != 3 {
		t.Fatalf("progress: %d notifications, response %s", count(notes, "notifications/progress"), r.raw)
	}
	last := -1.0
	for _, n := range notes {
		if n.Params["progressToken"] != "tok-1" {
			t.Fatalf("token not echoed: %s", n.raw)
		}
		if v := n.Params["progress"].(float64); v <= last {
			t.Fatalf("progress not increasing: %s", n.raw)
		} else {
			last = v
		}
	}
	notes, r = p.call(5, "tools/call", `{"name":"test_tool_with_logging"}`)
	if r.Error != nil || count(notes, "notifications/message") != 3 {
		t.Fatalf("logging: %d notifications, response %s", count(notes, "notifications/message"), r.raw)
	}
	if _, has := r.Result["resultType"]; has {
		t.Fatalf("legacy result carries resultType: %s", r.raw)
	}
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"script","version":"1"}%s}`

func meta(extra string) string { return fmt.Sprintf(modernMeta, extra) }

// TestStdioModernSession: server/discover → tools/call with _meta → an MRTR
// round trip, with no initialize.
func TestStdioModernSession(t *testing.T) {
	p := startStdio(t)
	_, r := p.call(1, "server/discover", "{"+meta("")+"}")
	if r.Error != nil || r.Result["resultType"] != "complete" || r.Result["supportedVersions"] == nil || r.Result["cacheScope"] == nil {
		t.Fatalf("discover: %s", r.raw)
	}
	notes, r := p.call(2, "tools/call", `{"name":"test_tool_with_logging",`+meta(`,"io.modelcontextprotocol/logLevel":"info","progressToken":7`)+`}`)
	if r.Error != nil || r.Result["resultType"] != "complete" || count(notes, "notifications/message") != 3 {
		t.Fatalf("modern call: %d logs, %s", count(notes, "notifications/message"), r.raw)
	}
	notes, r = p.call(3, "tools/call", `{"name":"test_tool_with_logging",`+meta("")+`}`)
	if len(notes) != 0 {
		t.Fatalf("logs sent without logLevel: %v", notes)
	}
	// MRTR: round 1 asks, round 2 (new id) answers with the sealed state.
	_, r = p.call(4, "tools/call", `{"name":"test_input_required_result_elicitation",`+meta("")+`}`)
	if r.Result["resultType"] != "input_required" {
		t.Fatalf("round 1: %s", r.raw)
	}
	state, _ := json.Marshal(r.Result["requestState"])
	_, r = p.call(5, "tools/call", `{"name":"test_input_required_result_elicitation","inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}},"requestState":`+string(state)+`,`+meta("")+`}`)
	if r.Result["resultType"] != "complete" || !strings.Contains(r.raw, "Hello, Alice!") {
		t.Fatalf("round 2: %s", r.raw)
	}
	// Write-once tool over the modern era.
	_, r = p.call(6, "tools/call", `{"name":"greet_user",`+meta("")+`}`)
	if r.Result["resultType"] != "input_required" {
		t.Fatalf("greet_user round 1: %s", r.raw)
	}
	// A tampered state is a JSON-RPC error.
	_, r = p.call(7, "tools/call", `{"name":"test_input_required_result_elicitation","inputResponses":{},"requestState":"AAAA-TAMPERED",`+meta("")+`}`)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("tampered: %s", r.raw)
	}
}

// TestStdioBadInput: every bad line gets a clear JSON-RPC error and the
// server keeps serving the next request.
func TestStdioBadInput(t *testing.T) {
	p := startStdio(t)
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	cases := []struct {
		name string
		line string
		id   string
		code int
		msg  string
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":`, "null", -32700, "invalid JSON"},
		{"wrong id type", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, "null", -32600, "id"},
		{"wrong params type", `{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}`, "3", -32600, "params"},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`, "4", -32601, "no/such/method"},
		{"deep nesting", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + deep + `}}`, "5", -32700, "maximum depth"},
		{"duplicate keys", `{"jsonrpc":"2.0","id":6,"method":"ping","method":"tools/list"}`, "6", -32600, "duplicate"},
		{"Method casing", `{"jsonrpc":"2.0","id":7,"Method":"ping"}`, "7", -32600, "case-sensitive"},
		{"oversize line", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4<<20) + `"}}`, "8", -32700, "exceeds the limit"}, // the id is read from the line's start
		{"batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, "null", -32600, "batch"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":10,"method":"ping"}`, "10", -32600, "jsonrpc"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p.t = t
			p.send(tc.line)
			_, r := p.until(tc.id)
			if r.Error == nil || r.Error.Code != tc.code || !strings.Contains(strings.ToLower(r.Error.Message), strings.ToLower(tc.msg)) {
				t.Fatalf("got %s, want code %d mentioning %q", r.raw, tc.code, tc.msg)
			}
			// The server keeps serving.
			_, r = p.call(1000+i, "ping", "")
			if r.Error != nil || len(r.Result) != 0 {
				t.Fatalf("ping after bad input: %s", r.raw)
			}
		})
	}
}

// TestStdioEOFFlushesInFlight: requests in flight when stdin closes still
// get their replies before the process exits.
func TestStdioEOFFlushesInFlight(t *testing.T) {
	p := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_reconnection",` + meta("") + `}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress",` + meta("") + `}}`)
	_ = p.stdin.Close()
	got := map[string]bool{}
	for line := range p.lines {
		var f frame
		_ = json.Unmarshal([]byte(line), &f)
		if f.Result != nil {
			got[string(f.ID)] = true
		}
	}
	if !got["1"] || !got["2"] {
		t.Fatalf("replies lost at EOF: %v; stderr:\n%s", got, p.stderr)
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, nil, &out, &errb); code != exitUsage {
		t.Fatalf("no args: %d", code)
	}
	if code := run([]string{"bogus"}, nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "unknown command") {
		t.Fatalf("bogus: %d %s", code, errb.String())
	}
	if code := run([]string{"help"}, nil, &out, &errb); code != exitOK || !strings.Contains(out.String(), "serve") {
		t.Fatalf("help: %d", code)
	}
}
