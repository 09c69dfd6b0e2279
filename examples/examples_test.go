// Package examples_test builds every program under examples/ with go build,
// runs it (against the other examples where it needs a peer) and checks its
// output, so that the programs the README shows keep compiling and working.
package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runTimeout bounds every child process; a hang is killed and fails the test.
const runTimeout = 60 * time.Second

// build compiles ./examples/<name> into a fresh temporary directory and
// returns the binary's path.
func build(t *testing.T, name string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the examples: %v", err)
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(gobin, "build", "-o", bin, "./examples/"+name)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/%s: %v\n%s", name, err, out)
	}
	return bin
}

// start runs bin with a deadline; stdin and stdout are pipes, stderr is
// collected.
func start(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout *bufio.Reader, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdin, bufio.NewReader(out), stderr
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		ProtocolVersion   string         `json:"protocolVersion"`
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Raw json.RawMessage `json:"-"` // the result as sent
}

// send writes one request line and reads lines until the response with
// the same id arrives (notifications in between are skipped); an error
// response fails the test.
func send(t *testing.T, in io.Writer, out *bufio.Reader, id int, line string) response {
	t.Helper()
	r := exchange(t, in, out, id, line)
	if r.Error != nil {
		t.Fatalf("%s: error %d %s", line, r.Error.Code, r.Error.Message)
	}
	return r
}

// exchange is send that returns an error response too.
func exchange(t *testing.T, in io.Writer, out *bufio.Reader, id int, line string) response {
	t.Helper()
	if _, err := io.WriteString(in, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	want, _ := json.Marshal(id)
	for {
		l, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("waiting for the reply to %s: %v (read %q)", line, err, l)
		}
		var r response
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		if bytes.Equal(r.ID, want) {
			var raw struct {
				Result json.RawMessage `json:"result"`
			}
			_ = json.Unmarshal(l, &raw)
			r.Raw = raw.Result
			return r
		}
	}
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// The quick start serves add over stdio in both eras, reports an overflow
// as a tool error, and exits with status 0 and nothing on stderr when
// stdin ends.
func TestQuickstart(t *testing.T) {
	cmd, in, out, stderr := start(t, build(t, "quickstart"))

	r := send(t, in, out, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if r.Result.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize negotiated %q", r.Result.ProtocolVersion)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	r = send(t, in, out, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	if r.Result.IsError || r.Result.StructuredContent["sum"] != 5.0 {
		t.Fatalf("legacy add: %+v", r.Result)
	}
	r = send(t, in, out, 3, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":40,"b":2},`+modernMeta+`}}`)
	if r.Result.IsError || r.Result.StructuredContent["sum"] != 42.0 {
		t.Fatalf("modern add: %+v", r.Result)
	}
	r = send(t, in, out, 4, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":9223372036854775807,"b":1},`+modernMeta+`}}`)
	if !r.Result.IsError || len(r.Result.Content) == 0 || !strings.Contains(r.Result.Content[0].Text, "overflow") {
		t.Fatalf("overflowing add: want isError with an overflow message, got %+v", r.Result)
	}

	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(out); len(rest) > 0 {
		t.Errorf("unexpected output after the last reply: %q", rest)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("quickstart at the end of stdin: %v (stderr %q); want exit status 0", err, stderr)
	}
	if stderr.Len() > 0 {
		t.Fatalf("quickstart wrote to stderr: %q", stderr)
	}
}

// The client example calls add on the HTTP server example; the server
// shuts down cleanly on SIGINT.
func TestClientAgainstHTTPServer(t *testing.T) {
	serverBin, clientBin := build(t, "httpserver"), build(t, "client")
	srv, _, srvOut, srvErr := start(t, serverBin, "-addr", "127.0.0.1:0")
	line, err := srvOut.ReadString('\n')
	if err != nil {
		t.Fatalf("httpserver did not print its URL: %v (stderr %q)", err, srvErr)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("httpserver printed %q", line)
	}

	cl, _, clOut, clErr := start(t, clientBin, "-url", url)
	got, _ := io.ReadAll(clOut)
	if err := cl.Wait(); err != nil {
		t.Fatalf("client: %v (stderr %q)", err, clErr)
	}
	if want := "modern {\"sum\":5}\n"; string(got) != want {
		t.Fatalf("client printed %q, want %q (stderr %q)", got, want, clErr)
	}

	if err := srv.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("httpserver after SIGINT: %v (stderr %q); want exit status 0", err, srvErr)
	}
}

// The elicitation example runs the same handler in both eras.
func TestElicit(t *testing.T) {
	cmd, _, out, stderr := start(t, build(t, "elicit"))
	got, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("elicit: %v (stderr %q)", err, stderr)
	}
	if want := "legacy Hello, Ada!\nmodern Hello, Ada!\n"; string(got) != want {
		t.Fatalf("elicit printed %q, want %q", got, want)
	}
}

// The tasks example runs one tool as a task in both eras, with input asked
// for inside the task.
func TestTasks(t *testing.T) {
	cmd, _, out, stderr := start(t, build(t, "tasksdemo"))
	got, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tasksdemo: %v (stderr %q)", err, stderr)
	}
	s := string(got)
	for _, want := range []string{"legacy result: report ready\n", "modern task: completed\nmodern result: report ready\n"} {
		if !strings.Contains(s, want) {
			t.Fatalf("tasksdemo printed %q, want it to contain %q", s, want)
		}
	}
}
