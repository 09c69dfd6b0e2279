package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
)

// everythingURL serves a fresh everything server over Streamable HTTP.
func everythingURL(t *testing.T) string {
	t.Helper()
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// cli runs the pmcp command line in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// serverArgs returns the flags that select the everything server over
// transport ("http" or "stdio"): for stdio the test binary itself, re-run
// as pmcp (PMCP_TEST_RUN_MAIN=1).
func serverArgs(t *testing.T, transport string) (flags, tail []string) {
	t.Helper()
	if transport == "http" {
		return []string{"--url", everythingURL(t)}, nil
	}
	return nil, []string{"--", "env", "PMCP_TEST_RUN_MAIN=1", os.Args[0], "serve", "--stdio", "--log-level", "warn"}
}

func cmdline(flags []string, args []string, tail []string) []string {
	out := append([]string{}, args...)
	out = append(out, flags...)
	return append(out, tail...)
}

// TestClientCommands runs every client command against the everything
// server over both transports and in both eras.
func TestClientCommands(t *testing.T) {
	for _, transport := range []string{"http", "stdio"} {
		for _, era := range []string{"modern", "legacy"} {
			t.Run(transport+"/"+era, func(t *testing.T) {
				t.Parallel()
				// Over stdio every command starts a server process, so the
				// checks that do not depend on the transport run over HTTP
				// only.
				full := transport == "http"
				flags, tail := serverArgs(t, transport)
				flags = append(flags, "--era", era)
				run := func(args ...string) (int, string, string) {
					t.Helper()
					return cli(t, cmdline(flags, args, tail)...)
				}

				code, out, errs := run("inspect")
				if code != exitOK || !strings.Contains(out, "Server:       pmcp-everything") ||
					!strings.Contains(out, "("+era+" era)") || !strings.Contains(out, "test_tool_with_progress") ||
					!strings.Contains(out, "test://static-text") || !strings.Contains(out, "test_prompt_with_arguments(arg1*, arg2*)") {
					t.Fatalf("inspect: %d\n%s\n%s", code, out, errs)
				}

				code, out, errs = run("inspect", "--json")
				var rep struct {
					Era             string `json:"era"`
					ProtocolVersion string `json:"protocolVersion"`
					ServerInfo      struct{ Name string }
					Tools           []struct{ Name string }
					Resources       []struct{ URI string }
					Prompts         []struct{ Name string }
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
					t.Fatalf("inspect --json: %d %v\n%s\n%s", code, err, out, errs)
				}
				if rep.Era != era || rep.ServerInfo.Name != "pmcp-everything" || len(rep.Tools) < 10 || len(rep.Resources) == 0 || len(rep.Prompts) == 0 {
					t.Fatalf("inspect --json: %+v", rep)
				}

				code, out, errs = run("call", "add", "a=19", "b=23", "--json")
				var res struct {
					StructuredContent struct{ Sum int } `json:"structuredContent"`
				}
				if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res.StructuredContent.Sum != 42 {
					t.Fatalf("call add --json: %d\n%s\n%s", code, out, errs)
				}
				if full {
					for _, what := range []string{"tools", "resources", "prompts"} {
						code, out, errs = run(what, "list", "--json")
						var m map[string]json.RawMessage
						if code != exitOK || json.Unmarshal([]byte(out), &m) != nil || len(m[what]) < 3 {
							t.Fatalf("%s list --json: %d\n%s\n%s", what, code, out, errs)
						}
					}
					if code, out, _ = run("tools", "list"); code != exitOK || !strings.Contains(out, "Adds two integers.") {
						t.Fatalf("tools list: %d\n%s", code, out)
					}

					if code, out, errs = run("call", "add", `{"a":1,"b":2}`); code != exitOK || strings.TrimSpace(out) != `{"sum":3}` {
						t.Fatalf("call add '{json}': %d %q %s", code, out, errs)
					}
					if code, out, _ = run("call", "echo", "text=hello world"); code != exitOK || strings.TrimSpace(out) != "hello world" {
						t.Fatalf("call echo: %d %q", code, out)
					}
					if code, _, errs = run("call", "test_tool_with_logging", "--log-level", "off"); code != exitOK || strings.Contains(errs, "[server") {
						t.Fatalf("--log-level off: %d\n%s", code, errs)
					}
					if code, out, _ = run("read", "test://static-binary"); code != exitOK || !strings.Contains(out, "blob image/png") {
						t.Fatalf("read blob: %d\n%s", code, out)
					}
					if code, out, _ = run("get", "test_simple_prompt", "--json"); code != exitOK || !strings.Contains(out, `"messages"`) {
						t.Fatalf("get --json: %d\n%s", code, out)
					}
				}

				// Progress and log records go to stderr, the result to stdout.
				code, out, errs = run("call", "test_tool_with_progress")
				if code != exitOK || !strings.Contains(out, "Progress test completed") ||
					!strings.Contains(errs, "progress 50/100 (50%)") || !strings.Contains(errs, "progress 100/100 (100%)") {
					t.Fatalf("call with progress: %d\nstdout %s\nstderr %s", code, out, errs)
				}
				code, _, errs = run("call", "test_tool_with_logging")
				if code != exitOK || !strings.Contains(errs, "[server info] Tool processing data") {
					t.Fatalf("call with logging: %d\n%s", code, errs)
				}
				// A tool error exits 1 with the tool's text; so does a server error.
				if code, out, errs = run("call", "test_error_handling"); code != exitError || !strings.Contains(out, "intentionally returns an error") ||
					!strings.Contains(errs, "reported an error") {
					t.Fatalf("isError: %d\n%s\n%s", code, out, errs)
				}
				if code, _, errs = run("call", "no_such_tool"); code != exitError || !strings.Contains(errs, "-32602") {
					t.Fatalf("unknown tool: %d\n%s", code, errs)
				}

				if code, out, errs = run("read", "test://static-text"); code != exitOK || !strings.Contains(out, "static text resource") {
					t.Fatalf("read: %d\n%s\n%s", code, out, errs)
				}
				if code, out, errs = run("get", "test_prompt_with_arguments", "arg1=x", "arg2=y"); code != exitOK ||
					!strings.Contains(out, "arg1='x', arg2='y'") {
					t.Fatalf("get: %d\n%s\n%s", code, out, errs)
				}
			})
		}
	}
}

// TestClientCommandsNegotiate: without --era the client settles on the
// modern era against the dual-era server, over both transports.
func TestClientCommandsNegotiate(t *testing.T) {
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			flags, tail := serverArgs(t, transport)
			code, out, errs := cli(t, cmdline(flags, []string{"inspect"}, tail)...)
			if code != exitOK || !strings.Contains(out, "Protocol:     2026-07-28 (modern era)") {
				t.Fatalf("%d\n%s\n%s", code, out, errs)
			}
		})
	}
}

// TestClientCommandsInputTools: the CLI declares no sampling, elicitation
// or roots handlers, so tools needing them fail cleanly (exit 1).
func TestClientCommandsInputTools(t *testing.T) {
	url := everythingURL(t)
	code, out, errs := cli(t, "call", "test_sampling", "prompt=hi", "--url", url)
	if code != exitError {
		t.Fatalf("%d\n%s\n%s", code, out, errs)
	}
}

func TestClientUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"inspect"},                          // no server
		{"inspect", "--url", "x", "--", "y"}, // both
		{"inspect", "extra", "--url", "http://127.0.0.1:1/mcp"},
		{"call", "--url", "http://127.0.0.1:1/mcp"},
		{"call", "t", "novalue", "--url", "http://127.0.0.1:1/mcp"},
		{"call", "t", "a=1", "a=2", "--url", "http://127.0.0.1:1/mcp"},
		{"call", "t", "{bad json", "--url", "http://127.0.0.1:1/mcp"},
		{"read", "--url", "http://127.0.0.1:1/mcp"},
		{"get", "--url", "http://127.0.0.1:1/mcp"},
		{"tools", "show", "--url", "http://127.0.0.1:1/mcp"},
		{"inspect", "--era", "new", "--url", "http://127.0.0.1:1/mcp"},
		{"inspect", "--timeout", "soon", "--url", "http://127.0.0.1:1/mcp"},
		{"inspect", "--bogus", "--url", "http://127.0.0.1:1/mcp"},
		{"inspect", "--url"},
	} {
		if code, _, errs := cli(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%q: exit %d (stderr %q), want %d", args, code, errs, exitUsage)
		}
	}
	if code, out, _ := cli(t, "help"); code != exitOK || !strings.Contains(out, "exit codes:") || !strings.Contains(out, "3  connection or protocol failure") {
		t.Errorf("help: %d\n%s", code, out)
	}
	if code, out, _ := cli(t, "call", "-h"); code != exitOK || !strings.Contains(out, "call TOOL") {
		t.Errorf("call -h: %d\n%s", code, out)
	}
}

func TestClientConnectionFailures(t *testing.T) {
	// Nothing listens on the port of a closed server.
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL + "/mcp"
	ts.Close()
	if code, _, errs := cli(t, "inspect", "--url", url); code != exitConn || !strings.Contains(errs, "connect") {
		t.Errorf("closed port: %d %s", code, errs)
	}
	// A server command that exits at once.
	t.Setenv("PMCP_TEST_RUN_MAIN", "1")
	if code, _, errs := cli(t, "inspect", "--timeout", "5s", "--", os.Args[0], "no-such-command"); code != exitConn {
		t.Errorf("dead stdio server: %d %s", code, errs)
	}
	// An HTTP endpoint that is not MCP at all.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer plain.Close()
	if code, _, errs := cli(t, "inspect", "--url", plain.URL+"/mcp"); code != exitConn || !strings.Contains(errs, "404") {
		t.Errorf("non-MCP endpoint: %d %s", code, errs)
	}
}

// TestClientReadmeInvocations runs the two invocations the README shows
// as real processes: pmcp inspect against an HTTP URL and against a
// stdio server command.
func TestClientReadmeInvocations(t *testing.T) {
	url := everythingURL(t)
	for name, args := range map[string][]string{
		"http":  {"inspect", "--url", url},
		"stdio": {"inspect", "--", os.Args[0], "serve", "--stdio"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.Env = append(os.Environ(), "PMCP_TEST_RUN_MAIN=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "Protocol:     2026-07-28 (modern era)") || !strings.Contains(out.String(), "Tools (") {
				t.Fatalf("output:\n%s", out.String())
			}
		})
	}
}

func TestToolArgs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a=1", "b=true", "c=hello", "d={\"x\":[1]}", "e=null", `f="42"`, "g=", "h=1.5e3", "i=a=b"},
			`{"a":1,"b":true,"c":"hello","d":{"x":[1]},"e":null,"f":"42","g":"","h":1.5e3,"i":"a=b"}`},
		{[]string{`{"a": 1}`}, `{"a": 1}`},
	} {
		got, err := toolArgs(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("toolArgs(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"=1"}, {"x"}, {"a=1", "a=2"}, {"{nope"}} {
		if _, err := toolArgs(bad); err == nil {
			t.Errorf("toolArgs(%q): no error", bad)
		}
	}
}

// TestClientCallTask: pmcp call --task runs the tool as a task in both
// eras and shows its status on stderr.
func TestClientCallTask(t *testing.T) {
	url := everythingURL(t)
	for _, era := range []string{"modern", "legacy"} {
		code, out, errs := cli(t, "call", "slow_compute", "seconds=0.2", "label=cli", "--task", "--era", era, "--url", url)
		if code != exitOK || !strings.Contains(out, `computed "cli"`) {
			t.Fatalf("%s: code %d out %q err %q", era, code, out, errs)
		}
		if !strings.Contains(errs, "task ") || !strings.Contains(errs, "working") {
			t.Errorf("%s: no live status on stderr: %q", era, errs)
		}
		if era == "modern" && !strings.Contains(errs, "completed") {
			t.Errorf("modern: final status not shown: %q", errs)
		}
		code, _, errs = cli(t, "call", "failing_job", "--task", "--era", era, "--url", url)
		if code != exitError {
			t.Errorf("%s: failing_job exit %d (%q)", era, code, errs)
		}
	}
}
