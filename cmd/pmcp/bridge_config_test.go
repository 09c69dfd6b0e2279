package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauthclient"
	"github.com/gopmcp/pmcp/proxy"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// headerUpstream serves a tool "hdr" over loopback HTTP and records the
// X-Api-Key and Authorization headers of the requests it gets.
type headerUpstream struct {
	url  string
	mu   sync.Mutex
	keys []string
	auth []string
}

func newHeaderUpstream(t *testing.T) *headerUpstream {
	t.Helper()
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "hdr", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	type noArgs struct{}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "hdr"}, func(context.Context, *pmcp.RequestHandlerExtra, noArgs) (string, error) {
		return "ok", nil
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	u := &headerUpstream{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.keys = append(u.keys, r.Header.Get("X-Api-Key"))
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	u.url = ts.URL + "/mcp"
	return u
}

// TestBridgeConfigEnvHeaders: a url entry's headers take ${NAME} from the
// environment, and the upstream gets the value; an unset (or empty)
// variable refuses the file at start-up, naming the variable and the
// entry, before any upstream is contacted.
func TestBridgeConfigEnvHeaders(t *testing.T) {
	up := newHeaderUpstream(t)
	t.Setenv("PMCP_TEST_WEB_KEY", "k-123")
	cfg := writeConfig(t, `{"mcpServers": {"web": {"url": "`+up.url+`", "headers": {"X-Api-Key": "key ${PMCP_TEST_WEB_KEY}, $${literal}"}}}}`)
	url := startBridgeHTTP(t, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, "web_hdr", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	up.mu.Lock()
	keys := up.keys
	up.mu.Unlock()
	if len(keys) == 0 || keys[0] != "key k-123, ${literal}" {
		t.Fatalf("the upstream got X-Api-Key %q", keys)
	}

	for _, env := range []string{"unset", "empty"} {
		if env == "empty" {
			t.Setenv("PMCP_TEST_MISSING", "")
		}
		cfg := writeConfig(t, `{"mcpServers": {"web": {"url": "`+up.url+`", "headers": {"X-Api-Key": "${PMCP_TEST_MISSING}"}}}}`)
		var out, errb bytes.Buffer
		code := run([]string{"bridge", "--config", cfg}, strings.NewReader(""), &out, &errb)
		want := `server "web": headers["X-Api-Key"]: the environment variable PMCP_TEST_MISSING is not set`
		if code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("%s variable: exit %d, stderr %q; want %d and %q", env, code, errb.String(), exitUsage, want)
		}
	}
}

// TestBridgeConfigEntries: the entry fields this file adds are checked
// when the file is read, each refusal naming the entry and the field.
func TestBridgeConfigEntries(t *testing.T) {
	const u = `"url": "http://127.0.0.1:1/mcp"`
	for _, c := range []struct{ entry, msg string }{
		{`"url": "http://x/mcp", "command": "srv"`, "has both url and command"},
		{`"command": "srv", "headers": {"A": "b"}`, "headers and oauth apply to a url upstream"},
		{u + `, "timeout": "soon"`, `timeout "soon": want a positive duration`},
		{u + `, "timeout": "-1s"`, `timeout "-1s"`},
		{u + `, "breaker": {"failures": 0}`, "breaker.failures: want at least 1"},
		{u + `, "breaker": {"failures": 2, "cooldown": "x"}`, `breaker.cooldown "x"`},
		{u + `, "headers": {"A": "${1X}"}`, `headers["A"]: ${1X}: not a variable name`},
		{u + `, "headers": {"A": "${OPEN"}`, `headers["A"]: an unterminated ${`},
		{u + `, "oauth": {}`, "oauth: give clientCredentials or tokenExchange"},
		{u + `, "oauth": {"clientCredentials": {"clientId": "c"}}`, "oauth.clientCredentials: give tokenUrl or issuer"},
		{u + `, "oauth": {"clientCredentials": {"tokenUrl": "http://127.0.0.1:1/t", "clientId": "c", "clientSecret": "${PMCP_TEST_NO_SECRET}"}}`,
			"oauth: clientCredentials.clientSecret: the environment variable PMCP_TEST_NO_SECRET is not set"},
		{u + `, "headers": {"authorization": "Bearer x"}, "oauth": {"clientCredentials": {"tokenUrl": "http://127.0.0.1:1/t", "clientId": "c"}}`, "oauth and an Authorization header"},
		{u + `, "oauth": {"tokenExchange": {"issuer": "http://127.0.0.1:1"}}`, "oauth.tokenExchange: give subjectToken or subjectTokenFile"},
		{u + `, "oauth": {"tokenExchange": {"tokenUrl": "http://as.example/token", "subjectTokenFile": "/t"}}`, "oauth: pmcp: oauthclient token exchange: tokenURL"},
		{u + `, "oauth": {"tokenExchange": {"issuer": "http://127.0.0.1:1", "subjectToken": "${PMCP_TEST_NO_SUBJECT}"}}`, "oauth: tokenExchange.subjectToken: the environment variable PMCP_TEST_NO_SUBJECT is not set"},
		{u + `, "oauth": {"clientCredentials": {"tokenUrl": "http://127.0.0.1:1/t", "clientId": "c"}, "tokenExchange": {"issuer": "http://127.0.0.1:1", "subjectToken": "s"}}`, "oauth: give clientCredentials or tokenExchange"},
	} {
		cfg := writeConfig(t, `{"mcpServers": {"e": {`+c.entry+`}}}`)
		_, err := readBridgeConfig(cfg)
		if err == nil || !strings.Contains(err.Error(), `server "e": `+c.msg) {
			t.Errorf("%s: %v; want %q", c.entry, err, c.msg)
		}
	}

	// A valid entry becomes the proxy upstream's timeout, breaker and
	// token source; its secret never prints.
	t.Setenv("PMCP_TEST_CC_SECRET", "s3cret")
	body := `{"mcpServers": {"e": {` + u + `, "timeout": "1.5s", "breaker": {"failures": 3, "cooldown": "10s"},
		"oauth": {"clientCredentials": {"issuer": "http://127.0.0.1:1", "clientId": "gw", "clientSecret": "${PMCP_TEST_CC_SECRET}", "scopes": ["a"]}}}}}`
	cfg, err := readBridgeConfig(writeConfig(t, body))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.MCPServers["e"]
	var ho pmcp.HTTPClientOptions
	up, err := s.upstream("e", ho, proxy.CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up.CallTimeout != 1500*time.Millisecond || up.Breaker != (proxy.Breaker{Failures: 3, Cooldown: 10 * time.Second}) || up.Fingerprint == "" {
		t.Fatalf("upstream %+v", up)
	}
	a, err := s.OAuth.authorizer()
	if _, ok := a.(*oauthclient.Source); !ok || err != nil {
		t.Fatalf("authorizer %T %v", a, err)
	}
	if out := fmt.Sprintf("%v %+v %#v", a, a, s.OAuth.ClientCredentials); strings.Contains(out, "s3cret") {
		t.Fatalf("printed %s", out)
	}
	// The fingerprint is stable across reads and follows the environment.
	again, err := readBridgeConfig(writeConfig(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if fp := again.MCPServers["e"]; fp.fingerprint() != up.Fingerprint {
		t.Fatal("the same entry read twice has two fingerprints")
	}
	t.Setenv("PMCP_TEST_CC_SECRET", "rotated")
	if rotated, err := readBridgeConfig(writeConfig(t, body)); err != nil {
		t.Fatal(err)
	} else if fp := rotated.MCPServers["e"]; fp.fingerprint() == up.Fingerprint {
		t.Fatal("a rotated secret kept the fingerprint")
	}
}

// TestBridgeConfigClientCredentials: a url entry with
// oauth.clientCredentials has the bridge fetch a token from the token
// endpoint (client_secret_basic, the configured scopes) and send it
// upstream; the downstream caller's own Authorization never is.
func TestBridgeConfigClientCredentials(t *testing.T) {
	up := newHeaderUpstream(t)
	var tmu sync.Mutex
	var basics []string
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		_ = r.ParseForm()
		tmu.Lock()
		basics = append(basics, id+":"+secret+" "+r.PostForm.Get("grant_type")+" "+r.PostForm.Get("scope"))
		tmu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"up-token","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(as.Close)
	t.Setenv("PMCP_TEST_CC_SECRET", "s3cret")
	cfg := writeConfig(t, `{"mcpServers": {"web": {"url": "`+up.url+`",
		"oauth": {"clientCredentials": {"tokenUrl": "`+as.URL+`/token", "clientId": "gw", "clientSecret": "${PMCP_TEST_CC_SECRET}", "scopes": ["mcp:tools"]}}}}}`)
	url := startBridgeHTTP(t, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer caller-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 3 {
		if _, err := cs.CallTool(ctx, "web_hdr", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	up.mu.Lock()
	auth := up.auth
	up.mu.Unlock()
	for _, a := range auth {
		if a != "Bearer up-token" {
			t.Fatalf("the upstream got Authorization %q, want the bridge's own token", auth)
		}
	}
	tmu.Lock()
	defer tmu.Unlock()
	if len(basics) != 1 || basics[0] != "gw:s3cret client_credentials mcp:tools" {
		t.Fatalf("token requests %q, want one", basics)
	}
}
