package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// gatewayAudience is the canonical URI the gateways of these tests serve.
const gatewayAudience = "https://gateway.example.com/mcp"

// httpUpstream serves the everything server over Streamable HTTP on a
// loopback port and returns its URL; kill stops it (streams, connections
// and listener), as the test's end does.
func httpUpstream(t *testing.T) (url string, kill func()) {
	t.Helper()
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	var once sync.Once
	kill = func() {
		once.Do(func() {
			h.Close()
			ts.CloseClientConnections()
			ts.Close()
		})
	}
	t.Cleanup(kill)
	return ts.URL, kill
}

// gatewayConfig writes a gateway configuration file with the stdio
// upstreams a and b (pmcp serve --stdio), the HTTP upstream web, and rest
// (the members after mcpServers), and returns its path.
func gatewayConfig(t *testing.T, web, rest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.json")
	writeGatewayConfig(t, path, web, rest)
	return path
}

func writeGatewayConfig(t *testing.T, path, web, rest string) {
	t.Helper()
	child := fmt.Sprintf(`{"command": %q, "args": ["serve", "--stdio", "--log-level", "off"], "env": {"PMCP_TEST_RUN_MAIN": "1", "GORACE": "atexit_sleep_ms=0"}}`, os.Args[0])
	servers := fmt.Sprintf(`"a": %s, "b": %s`, child, child)
	if web != "" {
		servers += fmt.Sprintf(`, "web": {"url": %q}`, web)
	}
	body := fmt.Sprintf(`{"mcpServers": {%s}%s}`, servers, rest)
	// Written whole and renamed, so a reload never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startGateway runs `pmcp gateway` on a loopback port with the issuer as
// its authorization server.
func startGateway(t *testing.T, config string, as *fakeIssuer) *listening {
	t.Helper()
	args := []string{"gateway", "--listen", "127.0.0.1:0", "--config", config}
	if as != nil {
		args = append(args, "--auth-issuer", as.ts.URL, "--auth-audience", gatewayAudience)
	}
	return startListening(t, args...)
}

// connectAs opens a session of era with the gateway as a caller holding
// token ("" for none).
func connectAs(t *testing.T, ctx context.Context, url string, era pmcp.Era, token string) *pmcp.ClientSession {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{Header: h, NoStandaloneStream: true})
	if err != nil {
		t.Fatalf("connect (%v): %v", era, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, ctx context.Context, cs *pmcp.ClientSession) []string {
	t.Helper()
	tools, err := cs.AllTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

// sameUnknown checks that hidden (an error for the hidden name) is the
// error for the unknown name, byte for byte once the names are swapped:
// same code, message and data.
func sameUnknown(t *testing.T, what string, errHidden, errUnknown error, hidden, unknown string) {
	t.Helper()
	var h, u *jsonrpc.Error
	if !errors.As(errHidden, &h) || !errors.As(errUnknown, &u) {
		t.Fatalf("%s: hidden %v, unknown %v: want JSON-RPC errors", what, errHidden, errUnknown)
	}
	swap := func(s string) string { return strings.ReplaceAll(s, unknown, hidden) }
	if h.Code != u.Code || h.Message != swap(u.Message) || string(h.Data) != swap(string(u.Data)) {
		t.Fatalf("%s: hidden answered %d %q %s\nunknown answered %d %q %s", what, h.Code, h.Message, h.Data, u.Code, u.Message, u.Data)
	}
}

// TestGatewayPolicies: `pmcp gateway` with an authorization server, two
// stdio upstreams and an HTTP one. Two principals (alice by her subject,
// root by the admin scope) each see their own tools, prompts and
// resources in both eras; a call, get or read of a hidden item answers
// exactly as one of an unknown item does; modern lists are private.
func TestGatewayPolicies(t *testing.T) {
	as := newFakeIssuer(t)
	web, _ := httpUpstream(t)
	config := gatewayConfig(t, web, `,
	"policies": [
		{"match": {"claims": {"sub": "alice"}}, "allowTools": ["a_*"], "denyTools": ["a_add"], "allowPrompts": ["a_*"], "allowResources": ["test://static-text"]},
		{"match": {"scopes": ["admin"]}, "allowTools": ["*"], "denyTools": ["web_*"], "allowPrompts": ["*"], "allowResources": ["*"]}
	]`)
	g := startGateway(t, config, as)
	alice := as.mintFor(t, gatewayAudience, "alice", "mcp")
	root := as.mintFor(t, gatewayAudience, "root", "admin")
	eve := as.mintFor(t, gatewayAudience, "eve", "mcp")
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := connectAs(t, ctx, g.url, era, alice)
			names := toolNames(t, ctx, a)
			if !slices.Contains(names, "a_echo") || slices.Contains(names, "a_add") || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "a_") }) {
				t.Fatalf("alice lists %v", names)
			}
			if res, err := a.CallTool(ctx, "a_echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
				t.Fatalf("alice a_echo: %+v %v", res, err)
			}
			_, errHidden := a.CallTool(ctx, "a_add", map[string]any{"a": 1, "b": 2})
			_, errUnknown := a.CallTool(ctx, "a_nope", map[string]any{"a": 1, "b": 2})
			sameUnknown(t, "tool of an allowed upstream", errHidden, errUnknown, "a_add", "a_nope")
			_, errHidden = a.CallTool(ctx, "web_echo", map[string]any{"text": "hi"})
			_, errUnknown = a.CallTool(ctx, "web_nope", map[string]any{"text": "hi"})
			sameUnknown(t, "tool of the HTTP upstream", errHidden, errUnknown, "web_echo", "web_nope")
			_, errHidden = a.GetPrompt(ctx, "b_test_simple_prompt", nil)
			_, errUnknown = a.GetPrompt(ctx, "a_test_nope_prompt", nil)
			sameUnknown(t, "prompt", errHidden, errUnknown, "b_test_simple_prompt", "a_test_nope_prompt")
			if _, err := a.GetPrompt(ctx, "a_test_simple_prompt", nil); err != nil {
				t.Fatalf("alice a_test_simple_prompt: %v", err)
			}
			res, err := a.AllResources(ctx)
			if err != nil || len(res) != 1 || res[0].URI != "test://static-text" {
				t.Fatalf("alice resources %v %v", res, err)
			}
			if _, err := a.ReadResource(ctx, "test://static-text"); err != nil {
				t.Fatalf("alice reads test://static-text: %v", err)
			}
			_, errHidden = a.ReadResource(ctx, "test://static-binary")
			_, errUnknown = a.ReadResource(ctx, "test://nope-binary")
			sameUnknown(t, "resource", errHidden, errUnknown, "test://static-binary", "test://nope-binary")

			r := connectAs(t, ctx, g.url, era, root)
			names = toolNames(t, ctx, r)
			if !slices.Contains(names, "a_add") || !slices.Contains(names, "b_echo") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "web_") }) {
				t.Fatalf("root lists %v", names)
			}
			if res, err := r.CallTool(ctx, "b_add", map[string]any{"a": 1, "b": 2}); err != nil || res.IsError {
				t.Fatalf("root b_add: %+v %v", res, err)
			}
			if era == pmcp.EraModern {
				l, err := r.ListTools(ctx, "")
				if err != nil || l.CacheScope != pmcp.CacheScopePrivate {
					t.Fatalf("modern tools/list cacheScope %q (%v)", l.CacheScope, err)
				}
			}
			// eve matches no policy: nothing at all.
			if names := toolNames(t, ctx, connectAs(t, ctx, g.url, era, eve)); len(names) != 0 {
				t.Fatalf("eve lists %v", names)
			}
		})
	}
	if strings.Contains(g.logs.String(), strings.Split(alice, ".")[2]) {
		t.Fatal("a token reached the log")
	}
}

// TestGatewayRateLimit: bob's calls of b_echo are limited to one (then one
// every 1000 s): the second is refused with -32029 and data.retryAfterMs
// in both eras, and a modern plain JSON request gets 429 with
// Retry-After. alice, whom the rule does not match, is not limited.
func TestGatewayRateLimit(t *testing.T) {
	as := newFakeIssuer(t)
	config := gatewayConfig(t, "", `,
	"rateLimits": [{"match": {"claims": {"sub": "bob"}}, "tools": ["b_echo"], "perSecond": 0.001, "burst": 1}]`)
	g := startGateway(t, config, as)
	bob := as.mintFor(t, gatewayAudience, "bob", "mcp")
	alice := as.mintFor(t, gatewayAudience, "alice", "mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := map[string]any{"text": "hi"}
	b := connectAs(t, ctx, g.url, pmcp.EraLegacy, bob)
	if _, err := b.CallTool(ctx, "b_echo", args); err != nil {
		t.Fatal(err)
	}
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		_, err := connectAs(t, ctx, g.url, era, bob).CallTool(ctx, "b_echo", args)
		var je *jsonrpc.Error
		var data struct {
			RetryAfterMs int64 `json:"retryAfterMs"`
		}
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeRateLimited || pmcp.Unmarshal(je.Data, &data) != nil || data.RetryAfterMs < 900_000 {
			t.Fatalf("%v: second call: %v", era, err)
		}
	}
	if _, err := b.CallTool(ctx, "a_echo", args); err != nil {
		t.Fatalf("a tool the rule does not name: %v", err)
	}
	for range 3 {
		if _, err := connectAs(t, ctx, g.url, pmcp.EraModern, alice).CallTool(ctx, "b_echo", args); err != nil {
			t.Fatalf("alice: %v", err)
		}
	}
	// Raw, as a modern client without an SDK sends it.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"b_echo","arguments":{"text":"x"},"extra":1,`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method": "tools/call", "Mcp-Name": "b_echo", "Authorization": "Bearer " + bob} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte(`"retryAfterMs":`)) || !bytes.Contains(body, []byte(`"id":9`)) {
		t.Fatalf("raw modern call: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// waitLog waits until the process logged want (after skip bytes).
func waitLog(t *testing.T, g *listening, skip int, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(g.logs.String()[skip:], want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", want, g.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGatewayReloadSIGHUP: SIGHUP applies a changed policy to a running
// legacy session (same session, told its tool list changed, the new view
// at once) while another caller's calls go on without one failing; a file
// that does not check is refused, logged with where it is wrong, and the
// policy in force is kept.
func TestGatewayReloadSIGHUP(t *testing.T) {
	as := newFakeIssuer(t)
	config := gatewayConfig(t, "", `, "policies": [{"match": {"claims": {"sub": "alice"}}, "allowTools": ["a_echo"]}, {"match": {"scopes": ["load"]}, "allowTools": ["a_*"]}]`)
	g := startGateway(t, config, as)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	changed := make(chan struct{}, 4)
	a, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy, Notifications: pmcp.ClientNotificationHandlers{
		ToolsListChanged: func(context.Context) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}}).ConnectHTTP(ctx, g.url, pmcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer " + as.mintFor(t, gatewayAudience, "alice", "mcp")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sid := a.SessionID()
	// Load: another caller calls on through every reload.
	load := connectAs(t, ctx, g.url, pmcp.EraModern, as.mintFor(t, gatewayAudience, "loader", "load"))
	stop, loaded := make(chan struct{}), make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				if n == 0 {
					loaded <- errors.New("no call made")
				}
				loaded <- nil
				return
			default:
			}
			if res, err := load.CallTool(ctx, "a_echo", map[string]any{"text": "x"}); err != nil || res.IsError {
				loaded <- fmt.Errorf("call %d under reload: %+v %v", n, res, err)
				return
			}
			n++
		}
	}()
	defer func() {
		close(stop)
		if err := <-loaded; err != nil {
			t.Error(err)
		}
	}()
	if names := toolNames(t, ctx, a); !slices.Equal(names, []string{"a_echo"}) {
		t.Fatalf("before: %v", names)
	}
	hup := func(want string) {
		t.Helper()
		n := len(g.logs.String())
		if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitLog(t, g, n, want)
	}
	writeGatewayConfig(t, config, "", `, "policies": [{"match": {"claims": {"sub": "alice"}}, "allowTools": ["a_echo", "b_echo"]}, {"match": {"scopes": ["load"]}, "allowTools": ["a_*"]}]`)
	hup("gateway configuration reloaded")
	select {
	case <-changed:
	case <-time.After(15 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the reload")
	}
	if names := toolNames(t, ctx, a); !slices.Equal(names, []string{"a_echo", "b_echo"}) || a.SessionID() != sid {
		t.Fatalf("after the reload: %v (session %q, was %q)", names, a.SessionID(), sid)
	}
	if _, err := a.CallTool(ctx, "b_echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatalf("b_echo after the reload: %v", err)
	}
	writeGatewayConfig(t, config, "", `, "policies": [{"match": {"claims": {"sub": "alice"}}, "allowTool": ["*"]}, {"match": {"scopes": ["load"]}, "allowTools": ["a_*"]}]`)
	hup("configuration refused")
	if !strings.Contains(g.logs.String(), `allowTool`) || !strings.Contains(g.logs.String(), `/policies/0`) {
		t.Fatalf("the refusal does not say where:\n%s", g.logs.String())
	}
	if names := toolNames(t, ctx, a); !slices.Equal(names, []string{"a_echo", "b_echo"}) {
		t.Fatalf("after a refused reload: %v", names)
	}
}

// TestGatewayReadiness: /healthz and /readyz on the gateway's listener;
// with the HTTP upstream killed, /readyz is 503 naming it while the stdio
// upstreams are still listed and answer.
func TestGatewayReadiness(t *testing.T) {
	web, kill := httpUpstream(t)
	g := startGateway(t, gatewayConfig(t, web, ""), nil)
	base := strings.TrimSuffix(g.url, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz with every upstream up: %d %q", code, body)
	}
	kill()
	// The probe result is kept for a second (proxy.Probe).
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "unreachable upstreams: web") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with web killed: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		cs := connectAs(t, ctx, g.url, era, "")
		names := toolNames(t, ctx, cs)
		if !slices.Contains(names, "a_echo") || !slices.Contains(names, "b_echo") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "web_") }) {
			t.Fatalf("%v: with web down: %v", era, names)
		}
		if res, err := cs.CallTool(ctx, "b_echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
			t.Fatalf("%v: b_echo with web down: %+v %v", era, res, err)
		}
	}
}

// TestGatewayConfigRefused: the configuration is strict JSON: an unknown
// member anywhere, or a value that does not check, is a usage error
// naming where it is; the flags --listen and --config are required.
func TestGatewayConfigRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{"unknown top member", `{"mcpServers": {"a": {"command": "x"}}, "polices": []}`, nil, `"polices"`},
		{"unknown nested member", `{"mcpServers": {"a": {"command": "x"}}, "rateLimits": [{"match": {"claim": {}}, "perSecond": 1, "burst": 1}]}`, nil, `/rateLimits/0/match`},
		{"unknown server member", `{"mcpServers": {"a": {"command": "x", "cmd": "y"}}}`, nil, `/mcpServers/a`},
		{"bad rate", `{"mcpServers": {"a": {"command": "x"}}, "rateLimits": [{"match": {}, "perSecond": 0, "burst": 1}]}`, nil, `rateLimits[0].perSecond`},
		{"no servers", `{"policies": []}`, nil, `no mcpServers`},
		{"no listen", `{}`, []string{"--listen", ""}, `--listen ADDR is required`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
			if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			args := append([]string{"--listen", "127.0.0.1:0", "--config", path}, c.args...)
			if code := gatewayCmd(context.Background(), args, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), exitUsage, c.want)
			}
		})
	}
}

// readmeGatewayExample returns the JSON block of README.md that follows
// the "<!-- gateway-example -->" marker.
func readmeGatewayExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- gateway-example -->\n```json\n")
	if !ok {
		t.Fatal("README.md has no gateway example block")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md: the gateway example block does not end")
	}
	return block
}

// TestGatewayREADMEExample runs the README's gateway configuration with
// "pmcp" being this binary, and checks what the README says of it: alice
// sees the ev_ tools but ev_panic and may call ev_add twice; an admin sees
// everything but the ops_test_* tools; anyone else nothing.
func TestGatewayREADMEExample(t *testing.T) {
	dir := t.TempDir()
	block := readmeGatewayExample(t)
	block = strings.ReplaceAll(block, `"command": "pmcp"`, fmt.Sprintf(`"command": %q`, os.Args[0]))
	block = strings.ReplaceAll(block, `"audit.jsonl"`, fmt.Sprintf("%q", filepath.Join(dir, "audit.jsonl")))
	config := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(config, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	as := newFakeIssuer(t)
	g := startGateway(t, config, as)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := connectAs(t, ctx, g.url, pmcp.EraModern, as.mintFor(t, gatewayAudience, "alice", "mcp"))
	names := toolNames(t, ctx, alice)
	if !slices.Contains(names, "ev_add") || slices.Contains(names, "ev_panic") || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "ev_") }) {
		t.Fatalf("alice lists %v", names)
	}
	for i := range 3 {
		_, err := alice.CallTool(ctx, "ev_add", map[string]any{"a": 1, "b": 2})
		var je *jsonrpc.Error
		if limited := errors.As(err, &je) && je.Code == jsonrpc.CodeRateLimited; (i == 2) != limited {
			t.Fatalf("alice's call %d of ev_add: %v", i+1, err)
		}
	}
	names = toolNames(t, ctx, connectAs(t, ctx, g.url, pmcp.EraLegacy, as.mintFor(t, gatewayAudience, "root", "admin")))
	if !slices.Contains(names, "ev_panic") || !slices.Contains(names, "ops_add") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "ops_test_") }) {
		t.Fatalf("admin lists %v", names)
	}
	if names := toolNames(t, ctx, connectAs(t, ctx, g.url, pmcp.EraModern, as.mintFor(t, gatewayAudience, "eve", "mcp"))); len(names) != 0 {
		t.Fatalf("eve lists %v", names)
	}
	// The audit trail: stopping the gateway writes what is queued.
	_ = g.cmd.Process.Signal(os.Interrupt)
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not stop")
	}
	trail, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"subject":"alice"`, `"target":"ev_add"`, `"upstream":"ev"`, `"decision":"rate_limited"`, `"decision":"allowed"`, `"subject":"eve"`} {
		if !bytes.Contains(trail, []byte(want)) {
			t.Errorf("the audit trail has no %s:\n%s", want, trail)
		}
	}
	if bytes.Contains(trail, []byte("Bearer")) || bytes.Contains(trail, []byte(`"arguments"`)) {
		t.Errorf("the audit trail holds a token or arguments:\n%s", trail)
	}
}

// startRedis runs a redis-server on a unix socket of its own until the
// test ends and returns its URL.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server: %v (apt-get install redis-server)", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return "unix://" + sock
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGatewayRedisBuckets: two gateway processes with --redis share their
// buckets: bob's one call of b_echo taken through the first is spent for
// the second too.
func TestGatewayRedisBuckets(t *testing.T) {
	url := startRedis(t)
	as := newFakeIssuer(t)
	config := gatewayConfig(t, "", `,
	"rateLimits": [{"match": {"claims": {"sub": "bob"}}, "tools": ["b_echo"], "perSecond": 0.001, "burst": 1}]`)
	var gs []*listening
	for range 2 {
		gs = append(gs, startListening(t, "gateway", "--listen", "127.0.0.1:0", "--config", config, "--redis", url,
			"--auth-issuer", as.ts.URL, "--auth-audience", gatewayAudience))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bob := as.mintFor(t, gatewayAudience, "bob", "mcp")
	if _, err := connectAs(t, ctx, gs[0].url, pmcp.EraModern, bob).CallTool(ctx, "b_echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	_, err := connectAs(t, ctx, gs[1].url, pmcp.EraLegacy, bob).CallTool(ctx, "b_echo", map[string]any{"text": "x"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeRateLimited {
		t.Fatalf("the second replica admitted bob's second call: %v", err)
	}
}
