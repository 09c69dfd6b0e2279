package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/oauthclient"
	"github.com/gopmcp/pmcp/transport/command"
)

// selfCmd runs this test binary as `pmcp args...`.
func selfCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	// GORACE: a race-enabled child (and its children) would sleep a
	// second at exit.
	cmd.Env = append(os.Environ(), "PMCP_TEST_RUN_MAIN=1", "GORACE=atexit_sleep_ms=0")
	return cmd
}

func greet(ctx context.Context, _ *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

// TestBridgeStdioToStdio: `pmcp bridge -- pmcp serve --stdio` driven over
// its stdio by a client of each era; the elicitation of greet_user crosses
// the bridge.
func TestBridgeStdioToStdio(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr, err := command.New(selfCmd("bridge", "--log-level", "warn", "--", os.Args[0], "serve", "--stdio", "--log-level", "off"), command.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := tr.Start()
			if err != nil {
				t.Fatal(err)
			}
			cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, Elicitation: greet}).Connect(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.Era() != era {
				t.Fatalf("era %v", cs.Era())
			}
			res, err := cs.CallTool(ctx, "greet_user", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*pmcp.TextContent).Text; !strings.Contains(got, "Hello, Ada!") {
				t.Fatalf("greet_user: %q", got)
			}
		})
	}
}

// TestBridgeURLToStdio: `pmcp bridge --url URL` gives a stdio-only host a
// remote Streamable HTTP server (here a legacy-only one), in both eras.
func TestBridgeURLToStdio(t *testing.T) {
	srv, err := everything.New(everything.Options{Server: pmcp.ServerOptions{Middleware: []pmcp.Middleware{legacyOnly}}})
	if err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	defer func() {
		_ = h.Close()
		ts.Close()
	}()
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr, err := command.New(selfCmd("bridge", "--log-level", "warn", "--url", ts.URL), command.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := tr.Start()
			if err != nil {
				t.Fatal(err)
			}
			cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, Elicitation: greet}).Connect(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, "greet_user", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*pmcp.TextContent).Text; !strings.Contains(got, "Hello, Ada!") {
				t.Fatalf("greet_user: %q", got)
			}
		})
	}
}

// legacyOnly refuses modern requests, as a 2025-11-25 server does.
func legacyOnly(next pmcp.MethodHandler) pmcp.MethodHandler {
	return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
		if req.Extra.Era() == pmcp.EraModern {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + req.Method}
		}
		return next(ctx, req)
	}
}

// TestBridgeConfigFile: --config reads an mcpServers file (command, args,
// env) and serves its servers prefixed.
func TestBridgeConfigFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "servers.json")
	body := `{"mcpServers": {"calc": {"command": ` + strconv.Quote(os.Args[0]) + `, "args": ["serve", "--stdio", "--log-level", "off"], "env": {"PMCP_TEST_RUN_MAIN": "1"}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startBridgeHTTP(t, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, "calc_add", map[string]any{"a": 20, "b": 22})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["sum"] != 42.0 {
		t.Fatalf("calc_add: %+v", res)
	}
}

// startBridgeHTTP runs `pmcp bridge --listen 127.0.0.1:0 args...` and
// returns its endpoint, read from its log.
func startBridgeHTTP(t *testing.T, args ...string) string {
	t.Helper()
	return startListening(t, append([]string{"bridge", "--listen", "127.0.0.1:0"}, args...)...).url
}

// listening is a `pmcp` process serving Streamable HTTP.
type listening struct {
	url  string
	cmd  *exec.Cmd
	logs *syncBuf
}

// startListening runs `pmcp args...`, a command that listens on HTTP, and
// returns it with its endpoint, read from its log; it is interrupted (and
// waited for) when the test ends.
func startListening(t *testing.T, args ...string) *listening {
	t.Helper()
	cmd := selfCmd(args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urlc := make(chan string, 1)
	logs := &syncBuf{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		re := regexp.MustCompile(`url=(http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		werr := make(chan error, 1)
		go func() { werr <- cmd.Wait() }()
		select {
		case <-werr:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-werr
		}
		<-done
	})
	select {
	case u := <-urlc:
		return &listening{url: u, cmd: cmd, logs: logs}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s never listened; log:\n%s", args[0], logs.String())
	}
	return nil
}

// TestBridgeHTTPAggregate: `pmcp bridge --listen` in front of two child
// servers, prefixed a_ and b_, with a deny glob, driven in both eras.
func TestBridgeHTTPAggregate(t *testing.T) {
	self := os.Args[0]
	url := startBridgeHTTP(t,
		"--upstream", "a="+self+" serve --stdio --log-level off",
		"--upstream", "b="+self+" serve --stdio --log-level off",
		"--deny-tool", "b_*", "--deny-tool", "*panic")
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, Elicitation: greet}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.AllTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools {
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "a_add") || slices.Contains(names, "a_panic") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "b_") }) {
				t.Fatalf("tools %v: want a_* without a_panic, no b_*", names)
			}
			res, err := cs.CallTool(ctx, "a_greet_user", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*pmcp.TextContent).Text; !strings.Contains(got, "Hello, Ada!") {
				t.Fatalf("a_greet_user: %q", got)
			}
			if _, err := cs.CallTool(ctx, "b_add", map[string]any{"a": 1, "b": 2}); err == nil {
				t.Fatal("a denied tool was called")
			}
		})
	}
}

// TestBridgeUsage: usage errors exit 2 with a message; -h exits 0.
func TestBridgeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bridge"}, exitUsage, "no upstream"},
		{[]string{"bridge", "--url", "ftp://x/mcp"}, exitUsage, "want http:// or https://"},
		{[]string{"bridge", "--url", "http://x/mcp", "--", "srv"}, exitUsage, "one kind of upstream"},
		{[]string{"bridge", "--upstream", "a=http://x", "--upstream", "a=http://y"}, exitUsage, "unique"},
		{[]string{"bridge", "--upstream", "a=http://x/mcp", "--upstream", "a_b=http://y/mcp"}, exitUsage, `upstream names "a" and "a_b" are ambiguous with separator "_"`},
		{[]string{"bridge", "--header-to-env", "Authorization=TOKEN", "--", "srv"}, exitUsage, "Authorization"},
		{[]string{"bridge", "--deny-tool", "[", "--", "srv"}, exitUsage, "glob"},
		{[]string{"bridge", "--oauth", "--url", "http://x/mcp"}, exitUsage, "-oauth"},
		{[]string{"bridge", "--config", "/nonexistent/servers.json"}, exitUsage, "no such file"},
		{[]string{"bridge", "--era", "future", "--", "srv"}, exitUsage, "--era"},
		{[]string{"bridge", "-h"}, exitOK, "usage: pmcp bridge"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.msg) {
			t.Errorf("%v: exit %d, output %q; want %d and %q", c.args, code, out.String()+errb.String(), c.code, c.msg)
		}
	}
}

// TestBridgeConfigAmbiguousNames: a --config whose server names would
// make two tools share a name ("a" listing "b_x" and "a_b" listing "x"
// are both "a_b_x") is refused at start-up, naming both servers, before
// any server starts; another separator makes the same file fine.
func TestBridgeConfigAmbiguousNames(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "servers.json")
	body := `{"mcpServers": {"a": {"command": "a-server"}, "a_b": {"url": "http://127.0.0.1:1/mcp"}, "db": {"command": "db-server"}, "db-ro": {"command": "db-server"}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sep, msg string }{
		{"_", `upstream names "a" and "a_b" are ambiguous with separator "_" ("a_b_x" would be "b_x" of "a" and "x" of "a_b")`},
		{"-", `upstream names "db" and "db-ro" are ambiguous with separator "-"`},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"bridge", "--config", cfg, "--separator", c.sep}, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("separator %q: exit %d, stderr %q; want %d and %q", c.sep, code, errb.String(), exitUsage, c.msg)
		}
	}
}

// TestBridgeOAuthConfig: the bridge's HTTP upstreams take the OAuth
// flags of the client commands: the same token store (the one `pmcp
// login` fills), client, scopes and loopback redirect.
func TestBridgeOAuthConfig(t *testing.T) {
	v, f := bridgeVerb()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if _, _, err := v.parse([]string{"--url", "http://127.0.0.1:1/mcp", "--client-id", "cid", "--scopes", "a b", "--token-store", tokens}); err != nil {
		t.Fatal(err)
	}
	defer f.auth.close()
	var o pmcp.HTTPClientOptions
	if err := f.auth.apply(&o, io.Discard); err != nil {
		t.Fatal(err)
	}
	oc, ok := o.Authorizer.(*oauthclient.Config)
	if !ok {
		t.Fatalf("authorizer %T", o.Authorizer)
	}
	st, ok := oc.TokenStore.(*fileStore)
	if !ok || st.dir != filepath.Dir(tokens) || !strings.HasPrefix(oc.RedirectURL, "http://127.0.0.1:") || oc.ClientID != "cid" || strings.Join(oc.Scopes, ",") != "a,b" {
		t.Fatalf("config %+v", oc)
	}
	// Without a terminal or --login, a 401 asks for `pmcp login`.
	if _, err := oc.Authorize(context.Background(), "https://as.example/authorize"); !errors.Is(err, errLoginRequired) {
		t.Fatalf("authorize: %v", err)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBridgeHeaderToEnvModern: `--header-to-env` applies to modern clients
// too, which have no session: each distinct header value gets a child
// with it in its environment (the same value shares one), and a client
// without the header the plain child.
func TestBridgeHeaderToEnvModern(t *testing.T) {
	dir := t.TempDir()
	tenants := filepath.Join(dir, "tenants")
	child := `printf '%s\n' "tenant=$TENANT" >> "$0"; exec "$1" serve --stdio --log-level off`
	url := startBridgeHTTP(t, "--header-to-env", "X-Tenant=TENANT", "--", "sh", "-c", child, tenants, os.Args[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tok := range []string{"alpha", "beta", "alpha", ""} {
		hdr := http.Header{}
		if tok != "" {
			hdr.Set("X-Tenant", tok)
		}
		cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraModern}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{Header: hdr})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "add", map[string]any{"a": 1, "b": 2}); err != nil {
			t.Fatal(err)
		}
		_ = cs.Close()
	}
	b, err := os.ReadFile(tenants)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	if got := strings.Join(lines, ","); got != "tenant=,tenant=alpha,tenant=beta" {
		t.Fatalf("children started with %q, want one per tenant and one without", got)
	}
}

// TestBridgeHeaderToEnvUsage: --header-to-env where no child could get
// the header is refused, not ignored.
func TestBridgeHeaderToEnvUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"bridge", "--header-to-env", "X-Tenant=T", "--", "srv"}, "--listen"},
		{[]string{"bridge", "--listen", "127.0.0.1:0", "--shared", "--header-to-env", "X-Tenant=T", "--", "srv"}, "--shared"},
		{[]string{"bridge", "--listen", "127.0.0.1:0", "--header-to-env", "X-Tenant=T", "--url", "http://x/mcp"}, "child"},
	} {
		var out, errb bytes.Buffer
		// Bounded: a bridge that accepted the flags would serve.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := bridge(ctx, c.args[1:], strings.NewReader(""), &out, &errb)
		cancel()
		if code != exitUsage || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), exitUsage, c.msg)
		}
	}
}
