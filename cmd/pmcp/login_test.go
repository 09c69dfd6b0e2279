package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/oauthclient"
)

// loginAS is a small authorization server for the CLI tests (cmd/pmcp's
// module does not depend on a full one): RFC 8414 metadata, dynamic
// registration, an authorization endpoint that consents at once (the
// "browser" only follows redirects), PKCE S256 and RFC 8707 resource
// checked at the token endpoint, JWT access tokens, refresh tokens.
// Loopback redirect URIs match with any port (RFC 8252 §7.3).
type loginAS struct {
	t   *testing.T
	ts  *httptest.Server
	key *ecdsa.PrivateKey

	mu            sync.Mutex
	clients       map[string]loginClient
	codes         map[string]loginCode
	refresh       map[string]loginCode
	issued        []string // every access and refresh token, to grep outputs for
	registrations int
	authorizes    int
	refreshes     int
	basicAuths    int
}

type loginClient struct {
	secret   string
	redirect []string
}

type loginCode struct {
	client, challenge, redirect, resource, scope string
}

func newLoginAS(t *testing.T) *loginAS {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := &loginAS{t: t, key: key, clients: map[string]loginClient{
		"pre": {secret: "pre-secret", redirect: []string{"http://127.0.0.1/callback"}},
	}, codes: map[string]loginCode{}, refresh: map[string]loginCode{}}
	as.ts = httptest.NewServer(as)
	t.Cleanup(as.ts.Close)
	return as
}

func (as *loginAS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	iss := as.ts.URL
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"jwks_uri":%q,`+
			`"code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["client_secret_basic","none"],`+
			`"scopes_supported":["mcp:tools","offline_access"],"authorization_response_iss_parameter_supported":true}`,
			iss, iss+"/authorize", iss+"/token", iss+"/register", iss+"/jwks")
	case "/jwks":
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &as.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	case "/register":
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
			AuthMethod   string   `json:"token_endpoint_auth_method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
			http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
			return
		}
		as.mu.Lock()
		as.registrations++
		id := fmt.Sprintf("dyn-%d", as.registrations)
		c := loginClient{redirect: req.RedirectURIs}
		if req.AuthMethod != "none" {
			c.secret = id + "-secret"
		}
		as.clients[id] = c
		as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		method := "client_secret_basic"
		if c.secret == "" {
			method = "none"
		}
		fmt.Fprintf(w, `{"client_id":%q,"client_secret":%q,"token_endpoint_auth_method":%q,"redirect_uris":[%q]}`, id, c.secret, method, req.RedirectURIs[0])
	case "/authorize":
		q := r.URL.Query()
		as.mu.Lock()
		defer as.mu.Unlock()
		c, ok := as.clients[q.Get("client_id")]
		if !ok || !loopbackMatch(c.redirect, q.Get("redirect_uri")) || q.Get("code_challenge_method") != "S256" || q.Get("resource") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		as.authorizes++
		code := fmt.Sprintf("code-%d", as.authorizes)
		as.codes[code] = loginCode{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			resource: q.Get("resource"), scope: q.Get("scope")}
		back, _ := url.Parse(q.Get("redirect_uri"))
		back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {iss}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		as.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

// loopbackMatch: a registered http://127.0.0.1 redirect URI matches with
// any port (RFC 8252 §7.3); anything else exactly.
func loopbackMatch(registered []string, got string) bool {
	g, err := url.Parse(got)
	if err != nil {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err != nil {
			continue
		}
		if r == got || (u.Scheme == "http" && u.Hostname() == "127.0.0.1" && g.Scheme == "http" && g.Hostname() == "127.0.0.1" && u.Path == g.Path) {
			return true
		}
	}
	return false
}

func (as *loginAS) token(w http.ResponseWriter, r *http.Request) {
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q}`, code)
	}
	if err := r.ParseForm(); err != nil {
		fail("invalid_request")
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	clientID := r.PostForm.Get("client_id")
	if id, secret, ok := r.BasicAuth(); ok {
		c, known := as.clients[id]
		if !known || c.secret != secret {
			fail("invalid_client")
			return
		}
		clientID = id
		as.basicAuths++
	} else if c, known := as.clients[clientID]; !known || c.secret != "" {
		fail("invalid_client")
		return
	}
	var g loginCode
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		var ok bool
		g, ok = as.codes[r.PostForm.Get("code")]
		delete(as.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.client != clientID || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge ||
			g.redirect != r.PostForm.Get("redirect_uri") || g.resource != r.PostForm.Get("resource") {
			fail("invalid_grant")
			return
		}
	case "refresh_token":
		var ok bool
		g, ok = as.refresh[r.PostForm.Get("refresh_token")]
		if !ok || g.client != clientID {
			fail("invalid_grant")
			return
		}
		as.refreshes++
	default:
		fail("unsupported_grant_type")
		return
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: as.key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		as.t.Error(err)
		return
	}
	now := time.Now()
	at, err := jwt.Signed(s).Claims(map[string]any{"iss": as.ts.URL, "aud": g.resource, "sub": "cli-user", "client_id": clientID,
		"scope": g.scope, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": fmt.Sprint(len(as.issued))}).Serialize()
	if err != nil {
		as.t.Error(err)
		return
	}
	rt := fmt.Sprintf("rt-%d-%x", len(as.issued), sha256.Sum256([]byte(at)))
	as.refresh[rt] = g
	as.issued = append(as.issued, at, rt)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600,"refresh_token":%q,"scope":%q}`, at, rt, g.scope)
}

func (as *loginAS) counts() (registrations, authorizes, refreshes, basic int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.registrations, as.authorizes, as.refreshes, as.basicAuths
}

func (as *loginAS) tokens() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.issued...)
}

// protectedEverything serves the everything server behind
// auth.Authenticator with the JWT verifier (keys found through the AS's
// metadata). revoke makes the verifier refuse one token from then on.
type protectedEverything struct {
	url     string
	mu      sync.Mutex
	revoked map[string]bool
}

func newProtectedEverything(t *testing.T, as *loginAS) *protectedEverything {
	t.Helper()
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	p := &protectedEverything{url: ts.URL + "/mcp", revoked: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := auth.DiscoverIssuer(ctx, nil, as.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	jv, err := auth.NewJWTVerifier(auth.JWTOptions{JWKSURL: md.JWKSURI, Issuer: as.ts.URL, Audience: p.url})
	if err != nil {
		t.Fatal(err)
	}
	verify := auth.TokenVerifierFunc(func(ctx context.Context, tok string) (*auth.Token, error) {
		p.mu.Lock()
		revoked := p.revoked[tok]
		p.mu.Unlock()
		if revoked {
			return nil, auth.ErrInvalidToken
		}
		return jv.VerifyToken(ctx, tok)
	})
	authn, err := auth.NewAuthenticator(auth.Options{Verifier: verify, Resource: p.url, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.MountProtectedResourceMetadata(mux, &auth.ProtectedResourceMetadata{
		Resource: p.url, AuthorizationServers: []string{as.ts.URL}, ScopesSupported: []string{"mcp:tools"},
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate, InsufficientScope: authn.InsufficientScope})
	mux.Handle("/mcp", h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return p
}

// urlWatcher is a stderr that hands over the first authorization URL the
// CLI prints.
type urlWatcher struct {
	mu   sync.Mutex
	b    strings.Builder
	urls chan string
	sent bool
}

var printedAuthURL = regexp.MustCompile(`\n  (http://\S+/authorize\?\S+)\n`)

func (w *urlWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if m := printedAuthURL.FindStringSubmatch(w.b.String()); m != nil && !w.sent {
		w.sent = true
		w.urls <- m[1]
	}
	return len(p), nil
}

func (w *urlWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestMain's browser: with PMCP_TEST_BROWSER=1 the test binary is $BROWSER;
// it follows the authorization URL's redirects to the loopback listener.
func init() {
	if os.Getenv("PMCP_TEST_BROWSER") != "1" || len(os.Args) < 2 {
		return
	}
	resp, err := http.Get(os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "browser: the redirect answered", resp.Status)
		os.Exit(1)
	}
	os.Exit(0)
}

// The CLI's OAuth end to end against a protected everything server: a
// command without a terminal refuses to start a login and says how; `pmcp
// login` registers dynamically, opens the browser ($BROWSER, here the test
// binary following redirects), takes the loopback redirect and stores the
// tokens 0600; every client verb in both eras then uses them without a
// new login; a revoked access token is refreshed; no token ever appears in
// any output; logout forgets; --login signs in from any verb; with
// BROWSER=none the printed URL is enough; pre-registered --client-id and
// --client-secret are used instead of registering.
func TestLoginCommand(t *testing.T) {
	as := newLoginAS(t)
	rs := newProtectedEverything(t, as)
	store := filepath.Join(t.TempDir(), "cfg", "pmcp", "tokens.json")
	t.Setenv(tokenStoreEnv, store)
	t.Setenv(browserEnv, "none")
	// A -race browser child would linger 1 s at exit (the race detector's
	// default atexit sleep), outliving the goroutine check of TestMain.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	var outputs strings.Builder
	pm := func(args ...string) (int, string, string) {
		t.Helper()
		code, out, errs := cli(t, args...)
		outputs.WriteString(out + errs)
		return code, out, errs
	}

	// No terminal, no --login, nothing stored: refused with the way out.
	code, _, errs := pm("tools", "list", "--url", rs.url)
	if code != exitConn || !strings.Contains(errs, "pmcp login --url "+rs.url) {
		t.Fatalf("without login: %d\n%s", code, errs)
	}
	if _, authorizes, _, _ := as.counts(); authorizes != 0 {
		t.Fatalf("%d authorizations without a user", authorizes)
	}

	// pmcp login, the browser being this test binary.
	t.Setenv(browserEnv, os.Args[0])
	t.Setenv("PMCP_TEST_BROWSER", "1")
	code, out, errs := pm("login", "--url", rs.url)
	if code != exitOK || !strings.Contains(out, "Signed in to "+rs.url+" (authorization server "+as.ts.URL+")") {
		t.Fatalf("login: %d\n%s\n%s", code, out, errs)
	}
	fi, err := os.Stat(store)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token store: %v %v", fi, err)
	}
	if di, err := os.Stat(filepath.Dir(store)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("token store directory: %v %v", di, err)
	}
	regs, authorizes, _, _ := as.counts()
	if authorizes != 1 {
		t.Fatalf("%d authorizations after login, want 1", authorizes)
	}
	t.Setenv(browserEnv, "none")

	// Every verb, both eras, on the stored tokens.
	for _, era := range []string{"modern", "legacy"} {
		for _, args := range [][]string{
			{"inspect"}, {"tools", "list"}, {"resources", "list"}, {"prompts", "list"},
			{"call", "echo", "text=hi"}, {"read", "test://static-text"}, {"get", "test_simple_prompt"},
		} {
			code, out, errs := pm(append(args, "--url", rs.url, "--era", era)...)
			if code != exitOK {
				t.Fatalf("%s %v: %d\n%s\n%s", era, args, code, out, errs)
			}
		}
	}
	if r, a, _, _ := as.counts(); r != regs || a != 1 {
		t.Fatalf("the verbs registered (%d→%d) or authorized (%d) again", regs, r, a)
	}

	// The access token stops working: the CLI refreshes, no new login.
	st := oauthclient.NewFileTokenStore(store)
	keys, err := st.Keys(context.Background())
	if err != nil || len(keys) != 1 {
		t.Fatalf("stored keys %v %v", keys, err)
	}
	creds, err := st.Load(context.Background(), keys[0])
	if err != nil || creds == nil {
		t.Fatal(err)
	}
	rs.mu.Lock()
	rs.revoked[creds.AccessToken.Reveal()] = true
	rs.mu.Unlock()
	if code, out, errs := pm("call", "echo", "text=again", "--url", rs.url); code != exitOK || !strings.Contains(out, "again") {
		t.Fatalf("after revocation: %d\n%s\n%s", code, out, errs)
	}
	if _, a, refreshes, _ := as.counts(); a != 1 || refreshes != 1 {
		t.Fatalf("%d authorizations, %d refreshes; want 1 and 1", a, refreshes)
	}

	// Logout forgets; the next command needs a login again.
	if code, out, _ := pm("logout", "--url", rs.url); code != exitOK || !strings.Contains(out, "Removed 1 stored credential(s)") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if code, _, errs := pm("call", "echo", "text=x", "--url", rs.url); code != exitConn || !strings.Contains(errs, "pmcp login") {
		t.Fatalf("after logout: %d\n%s", code, errs)
	}

	// --login: any verb signs in on a 401; with BROWSER=none the user
	// opens the printed URL (this test, reading stderr).
	stderr := &urlWatcher{urls: make(chan string, 1)}
	var stdout strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"call", "echo", "text=auto", "--login", "--url", rs.url}, strings.NewReader(""), &stdout, stderr)
	}()
	select {
	case u := <-stderr.urls:
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "signed in") {
			t.Fatalf("loopback page: %d %s", resp.StatusCode, body)
		}
	case code := <-done:
		t.Fatalf("--login ended without printing a URL: %d\n%s", code, stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("no URL printed:\n%s", stderr)
	}
	if code := <-done; code != exitOK || !strings.Contains(stdout.String(), "auto") {
		t.Fatalf("--login call: %d\n%s\n%s", code, stdout.String(), stderr)
	}
	outputs.WriteString(stdout.String() + stderr.String())

	// Pre-registered client: no registration, client_secret_basic.
	t.Setenv(browserEnv, os.Args[0])
	regs, _, _, basic := as.counts()
	if code, out, errs := pm("login", "--url", rs.url, "--client-id", "pre", "--client-secret", "pre-secret"); code != exitOK || !strings.Contains(out, "Signed in") {
		t.Fatalf("login with a pre-registered client: %d\n%s\n%s", code, out, errs)
	}
	if r, _, _, b := as.counts(); r != regs || b != basic+1 {
		t.Fatalf("pre-registered: %d registrations (was %d), %d basic token requests (was %d)", r, regs, b, basic)
	}
	if code, _, _ := pm("tools", "list", "--url", rs.url, "--client-id", "pre", "--client-secret", "pre-secret"); code != exitOK {
		t.Fatal("tools list with the pre-registered client's tokens failed")
	}

	// Logout without --url forgets everything.
	if code, out, _ := pm("logout"); code != exitOK || !strings.Contains(out, "Removed 1 stored credential(s)") {
		t.Fatalf("logout all: %d %s", code, out)
	}

	// No token or refresh token in any output of any command.
	all := outputs.String()
	issued := as.tokens()
	if len(issued) < 6 {
		t.Fatalf("only %d tokens issued", len(issued))
	}
	for _, tok := range issued {
		if strings.Contains(all, tok) || strings.Contains(all, tok[len(tok)-20:]) {
			t.Fatalf("a token was printed:\n%s", all)
		}
	}
}

// The loopback listener takes one authorization response, refuses
// anything else, and the wait is bounded by the context.
func TestLoopbackRedirect(t *testing.T) {
	t.Setenv(browserEnv, "none")
	lb, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer lb.close()
	lb.serve()
	if h, _, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(lb.redirectURL, callbackPath), "http://")); h != "127.0.0.1" {
		t.Fatalf("redirect URI %s is not on 127.0.0.1", lb.redirectURL)
	}
	get := func(q string) int {
		resp, err := http.Get(lb.redirectURL + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get(""); c != http.StatusBadRequest {
		t.Fatalf("no code: %d", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := lb.authorize(ctx, "http://as.invalid/authorize", io.Discard); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("unbounded wait: %v", err)
	}
	if c := get("?code=a&state=s"); c != http.StatusOK {
		t.Fatalf("first response: %d", c)
	}
	if c := get("?code=b&state=s"); c != http.StatusConflict {
		t.Fatalf("second response: %d", c)
	}
	u, err := lb.authorize(context.Background(), "http://as.invalid/authorize", io.Discard)
	if err != nil || u != lb.redirectURL+"?code=a&state=s" {
		t.Fatalf("response %q %v", u, err)
	}

	// Never served (no login was needed): close releases the port.
	idle, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	idle.close()
	if resp, err := http.Get(idle.redirectURL + "?code=a"); err == nil {
		resp.Body.Close()
		t.Fatal("the closed loopback port still answers")
	}
}
