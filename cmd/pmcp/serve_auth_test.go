package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp"
)

// watchWriter collects output and reports the URL of the first "serving
// MCP" log record.
type watchWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	url  chan string
	sent bool
}

var servingURL = regexp.MustCompile(`serving MCP over Streamable HTTP" url=(\S+)`)

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if m := servingURL.FindStringSubmatch(w.b.String()); m != nil && !w.sent {
		w.sent = true
		w.url <- m[1]
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// serveInProcess runs `pmcp serve` with args on a loopback port and
// returns its endpoint URL and its stderr; it stops when the test ends.
// The exit code is sent on done.
func serveInProcess(t *testing.T, args ...string) (endpoint string, stderr *watchWriter, done chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &watchWriter{url: make(chan string, 1)}
	done = make(chan int, 1)
	go func() {
		done <- serve(ctx, append([]string{"--http", "127.0.0.1:0"}, args...), nil, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("pmcp serve did not stop")
		}
	})
	select {
	case u := <-stderr.url:
		return u, stderr, done
	case code := <-done:
		done <- code
		return "", stderr, done
	case <-time.After(10 * time.Second):
		t.Fatalf("pmcp serve did not start; stderr:\n%s", stderr)
	}
	return "", nil, nil
}

// fakeIssuer is an authorization server that publishes RFC 8414 metadata
// and a JWKS, and mints JWT access tokens.
type fakeIssuer struct {
	ts  *httptest.Server
	key *ecdsa.PrivateKey
}

func newFakeIssuer(t *testing.T) *fakeIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIssuer{key: key}
	// Started once f.ts is set, so that the handler's reads of it follow
	// the write (a server started first serves on goroutines the write
	// does not happen before).
	f.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			// Endpoints but no registration: a client needs one made
			// beforehand (--client-id).
			fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q,"authorization_endpoint":%q,"token_endpoint":%q,"code_challenge_methods_supported":["S256"]}`,
				f.ts.URL, f.ts.URL+"/jwks", f.ts.URL+"/authorize", f.ts.URL+"/token")
		case "/jwks":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	f.ts.Start()
	t.Cleanup(f.ts.Close)
	return f
}

func (f *fakeIssuer) mint(t *testing.T, aud, scope string) string {
	t.Helper()
	return f.mintFor(t, aud, "cli-user", scope)
}

// mintFor mints a token for the subject sub.
func (f *fakeIssuer) mintFor(t *testing.T, aud, sub, scope string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: f.key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": f.ts.URL, "aud": aud, "sub": sub, "client_id": "c", "scope": scope,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// `pmcp serve --auth-issuer --auth-audience --auth-scopes` protects the
// everything server: the keys come from the issuer's metadata, the
// protected resource metadata is served at both well-known URLs, requests
// without a token get the 401 challenge, a token lacking --auth-scopes
// 403, a token for another audience 401, and a good token works in both
// eras.
func TestServeAuthIssuer(t *testing.T) {
	as := newFakeIssuer(t)
	const audience = "https://mcp.example.com/mcp"
	endpoint, stderr, _ := serveInProcess(t, "--auth-issuer", as.ts.URL, "--auth-audience", audience, "--auth-scopes", "mcp:tools, mcp:read")
	if endpoint == "" {
		t.Fatalf("serve failed:\n%s", stderr)
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Fatalf("warning on loopback with auth:\n%s", stderr)
	}
	origin := strings.TrimSuffix(endpoint, "/mcp")
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(origin + p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || doc.Resource != audience || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != as.ts.URL ||
			strings.Join(doc.ScopesSupported, " ") != "mcp:tools mcp:read" {
			t.Fatalf("%s: %+v %v", p, doc, err)
		}
	}
	ping := func(authz string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := ping("")
	want := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools mcp:read"`
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := ping("Bearer " + as.mint(t, "https://other.example.com/mcp", "mcp:tools mcp:read")); resp.StatusCode != 401 ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("other audience: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := ping("Bearer " + as.mint(t, audience, "mcp:tools")); resp.StatusCode != 403 ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("narrow token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	tok := as.mint(t, audience, "mcp:tools mcp:read")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		s, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).ConnectHTTP(ctx, endpoint, pmcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer " + tok}}, NoStandaloneStream: true})
		if err != nil {
			t.Fatalf("%v: %v", era, err)
		}
		res, err := s.CallTool(ctx, "echo", map[string]any{"text": "hi"})
		_ = s.Close()
		if err != nil || res.IsError {
			t.Fatalf("%v: echo %+v %v", era, res, err)
		}
	}
	if strings.Contains(stderr.String(), strings.Split(tok, ".")[2]) {
		t.Fatal("the token reached the log")
	}
}

// Flag errors and refused issuers.
func TestServeAuthRefusals(t *testing.T) {
	for _, args := range [][]string{
		{"--auth-audience", "https://mcp.example.com/mcp"},
		{"--auth-scopes", "a"},
		{"--auth-issuer", "https://as.example.com"},
		{"--stdio", "--auth-issuer", "https://as.example.com", "--auth-audience", "https://mcp.example.com/mcp"},
		{"--stdio", "--allow-host", "mcp.example.com"},
	} {
		var errb strings.Builder
		if code := serve(context.Background(), args, strings.NewReader(""), io.Discard, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, errb.String())
		}
	}
	// An http issuer on a non-loopback address is refused before anything
	// is fetched; so is a bad audience.
	for _, args := range [][]string{
		{"--auth-issuer", "http://as.example.com", "--auth-audience", "https://mcp.example.com/mcp"},
		{"--auth-issuer", "https://127.0.0.1:1", "--auth-audience", "mcp.example.com"},
	} {
		var errb strings.Builder
		code := serve(context.Background(), append([]string{"--http", "127.0.0.1:0"}, args...), nil, io.Discard, &errb)
		if code != exitError || !strings.Contains(errb.String(), "--auth-") {
			t.Errorf("%q: exit %d; stderr:\n%s", args, code, errb.String())
		}
	}
}

// --allow-host adds Host values; without --auth-issuer a non-loopback
// listen address draws a warning.
func TestServeAllowHost(t *testing.T) {
	endpoint, stderr, _ := serveInProcess(t, "--allow-host", "mcp.example.com", "--allow-host", "other.example.com:8443")
	if endpoint == "" {
		t.Fatalf("serve failed:\n%s", stderr)
	}
	for host, want := range map[string]int{"mcp.example.com": 200, "other.example.com:8443": 200, "other.example.com": 403, "evil.example.com": 403} {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Host = host
		req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"server/discover"}}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Fatalf("warning on a loopback address:\n%s", stderr)
	}
	var warn strings.Builder
	sec := serveSecurity{}
	for addr, want := range map[string]bool{"0.0.0.0:8080": true, ":8080": true, "192.0.2.1:80": true, "127.0.0.1:8080": false, "localhost:8080": false, "[::1]:80": false} {
		warn.Reset()
		if err := sec.apply(context.Background(), addr, http.NewServeMux(), &pmcp.StreamableHTTPOptions{}, &warn); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(warn.String(), "without --auth-issuer"); got != want {
			t.Errorf("%s: warning %v, want %v", addr, got, want)
		}
	}
}
