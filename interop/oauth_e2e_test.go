package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/oauthclient"
)

// statusLog records the status and challenge of every answer of the
// protected endpoint.
type statusLog struct {
	mu      sync.Mutex
	answers []string // "403 Bearer ..."
}

func (l *statusLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		l.answers = append(l.answers, fmt.Sprintf("%d %s", rec.code, w.Header().Get("WWW-Authenticate")))
		l.mu.Unlock()
	})
}

func (l *statusLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.answers
	l.answers = nil
	return a
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The whole of MCP authorization end to end, nothing faked but the user's
// browser: a zitadel/oidc provider (authorization code + PKCE S256,
// refresh tokens, JWT access tokens whose audience is the RFC 8707
// resource of the request) as the authorization server; pmcp's
// StreamableHTTPHandler behind auth.Authenticator, whose JWT verifier
// finds the provider's keys through DiscoverIssuer, as the resource
// server; and pmcp.Client with HTTPClientOptions.Authorizer, whose Authorize
// hook signs in at the provider's login page with a scripted HTTP client.
// In each era: the first call authorizes once; a tool needing a scope the
// token lacks is answered 403 insufficient_scope and the client steps up
// by itself (one more authorization); once the access token has expired
// (the shared test clock is advanced) the client refreshes without a new
// login. Then: a client whose tokens are minted for another audience gets
// 401 invalid_token; bob's token on alice's legacy session gets 404.
func TestOAuthEndToEndAgainstZitadel(t *testing.T) {
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	resource := rs.URL + "/mcp"
	// Redirect URIs registered without a port; the client uses another
	// loopback port (RFC 8252 §7.3). Nothing listens there: the scripted
	// user agent stops at the redirect.
	const registered, redirect = "http://127.0.0.1/callback", "http://127.0.0.1:1/callback"
	st, err := newCCStorage(
		&ccClient{id: "mcp-cli", secret: "mcp-cli-secret", scopes: []string{"mcp:tools", "mcp:deploy"}, redirects: []string{registered}},
		&ccClient{id: "elsewhere", secret: "elsewhere-secret", audience: "https://other.example.com/mcp", scopes: []string{"mcp:tools"}, redirects: []string{registered}},
	)
	if err != nil {
		t.Fatal(err)
	}
	st.users = map[string][]string{"alice": {"mcp:tools", "mcp:deploy"}, "bob": {"mcp:tools"}}
	issuer := startACProvider(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	log, deploys := startProtectedRS(t, mux, resource, st, issuer)

	type client struct {
		s              *pmcp.ClientSession
		store          *oauthclient.MemoryTokenStore
		authorizations atomic.Int64
	}
	connect := func(t *testing.T, era pmcp.Era, clientID, user string) (*client, error) {
		t.Helper()
		c := &client{store: &oauthclient.MemoryTokenStore{}}
		login := acLogin(user)
		cfg := &oauthclient.Config{
			ClientID: clientID, ClientSecret: pmcp.Secret(clientID + "-secret"), RedirectURL: redirect, TokenStore: c.store,
			Authorize: func(ctx context.Context, u string) (string, error) {
				c.authorizations.Add(1)
				return login(ctx, u)
			},
		}
		s, err := pmcp.NewClient(pmcp.ClientOptions{Name: "oauth-e2e", Era: era}).ConnectHTTP(ctx, resource, pmcp.HTTPClientOptions{Authorizer: cfg, NoStandaloneStream: true})
		if err != nil {
			return c, err
		}
		t.Cleanup(func() { _ = s.Close() })
		c.s = s
		return c, nil
	}
	key := oauthclient.TokenKey{Resource: resource, Issuer: issuer}
	accessToken := func(t *testing.T, c *client) string {
		t.Helper()
		cr, err := c.store.Load(ctx, key)
		if err != nil || cr == nil || cr.AccessToken == "" {
			t.Fatalf("no stored token: %v", err)
		}
		return cr.AccessToken.Reveal()
	}
	text := func(res *pmcp.CallToolResult) string { return res.Content[0].(*pmcp.TextContent).Text }
	scopesOf := func(s string) []string { _, sc, _ := strings.Cut(s, " "); return strings.Split(sc, ",") }

	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(fmt.Sprint(era), func(t *testing.T) {
			log.take()
			alice, err := connect(t, era, "mcp-cli", "alice")
			if err != nil {
				t.Fatal(err)
			}
			res, err := alice.s.CallTool(ctx, "whoami", map[string]any{})
			if err != nil || !strings.HasPrefix(text(res), "alice ") {
				t.Fatalf("whoami: %+v %v", res, err)
			}
			if sc := scopesOf(text(res)); !slices.Contains(sc, "mcp:tools") || slices.Contains(sc, "mcp:deploy") {
				t.Fatalf("first token's scopes %v: want mcp:tools without mcp:deploy", sc)
			}
			if n := alice.authorizations.Load(); n != 1 {
				t.Fatalf("%d authorizations for the first call, want 1", n)
			}
			if a := log.take(); !strings.HasPrefix(a[0], "401 Bearer ") || strings.Contains(a[0], "error=") {
				t.Fatalf("first answer %q: want the 401 challenge without an error code", a[0])
			}

			// Step-up: 403 insufficient_scope, then a new authorization for
			// the union of scopes, then the call succeeds.
			before := deploys.Load()
			res, err = alice.s.CallTool(ctx, "deploy", map[string]any{})
			if err != nil || text(res) != "deployed by alice" || deploys.Load() != before+1 {
				t.Fatalf("deploy after step-up: %+v %v", res, err)
			}
			answers := log.take()
			if !slices.ContainsFunc(answers, func(a string) bool {
				return strings.HasPrefix(a, "403 ") && strings.Contains(a, `scope="mcp:tools mcp:deploy", error="insufficient_scope"`)
			}) {
				t.Fatalf("no 403 insufficient_scope naming every scope: %q", answers)
			}
			if n := alice.authorizations.Load(); n != 2 {
				t.Fatalf("%d authorizations after the step-up, want 2", n)
			}
			res, err = alice.s.CallTool(ctx, "whoami", map[string]any{})
			if err != nil || !slices.Contains(scopesOf(text(res)), "mcp:deploy") {
				t.Fatalf("whoami after step-up: %+v %v", res, err)
			}

			// Expiry: advance the shared clock past the access token's
			// lifetime; the client refreshes, nobody signs in again.
			old := accessToken(t, alice)
			refreshes := st.refreshGrants.Load()
			st.clock.Add(int64(10 * time.Minute))
			log.take()
			res, err = alice.s.CallTool(ctx, "whoami", map[string]any{})
			if err != nil || !strings.HasPrefix(text(res), "alice ") {
				t.Fatalf("whoami after expiry: %+v %v", res, err)
			}
			if a := log.take(); !strings.HasPrefix(a[0], "401 ") || !strings.Contains(a[0], `error="invalid_token"`) {
				t.Fatalf("the expired token was not refused: %q", a)
			}
			if n, r := alice.authorizations.Load(), st.refreshGrants.Load(); n != 2 || r != refreshes+1 {
				t.Fatalf("after expiry: %d authorizations (want 2), %d refresh grants (want %d)", n, r, refreshes+1)
			}
			if accessToken(t, alice) == old {
				t.Fatal("the client kept the expired token")
			}
		})
	}

	// A client whose tokens the provider mints for another audience: the
	// resource server refuses every one with 401 invalid_token.
	other, err := connect(t, pmcp.EraModern, "elsewhere", "alice")
	var se *pmcp.HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized || !strings.Contains(se.WWWAuthenticate, `error="invalid_token"`) {
		t.Fatalf("token for another audience: %v", err)
	}
	if other.authorizations.Load() == 0 {
		t.Fatal("the other-audience client never obtained a token")
	}

	// Alice's legacy session, replayed with bob's token: 404, as unknown.
	alice, err := connect(t, pmcp.EraLegacy, "mcp-cli", "alice")
	if err != nil {
		t.Fatal(err)
	}
	sid := alice.s.SessionID()
	bob, err := connect(t, pmcp.EraLegacy, "mcp-cli", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := bob.s.CallTool(ctx, "whoami", map[string]any{}); err != nil || !strings.HasPrefix(text(res), "bob ") {
		t.Fatalf("bob: %+v %v", res, err)
	}
	if sid == "" || sid == bob.s.SessionID() {
		t.Fatalf("session ids %q %q", sid, bob.s.SessionID())
	}
	post := func(tok string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
		req.Header = http.Header{"Authorization": {"Bearer " + tok}, "Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"},
			"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		resp, err := rs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(accessToken(t, bob)); got != http.StatusNotFound {
		t.Fatalf("bob's token on alice's session: %d, want 404", got)
	}
	if got := post(accessToken(t, alice)); got != http.StatusOK {
		t.Fatalf("alice's token on her session: %d", got)
	}
	// bob may not grant mcp:deploy: his step-up ends in 403.
	_, err = bob.s.CallTool(ctx, "deploy", map[string]any{})
	if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Fatalf("bob's deploy: %v", err)
	}
}

// protectedRS serves, at resource on mux, a pmcp server with two tools
// ("whoami" answers the subject and scopes; "deploy" needs mcp:deploy)
// behind auth.Authenticator with the JWT verifier of the provider at
// issuer (found through DiscoverIssuer); every request needs mcp:tools.
// Expiry is also checked on st's clock, which the provider stamps exp
// with, so advancing it expires tokens.
func startProtectedRS(t *testing.T, mux *http.ServeMux, resource string, st *ccStorage, issuer string) (*statusLog, *atomic.Int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log := &statusLog{}
	md, err := auth.DiscoverIssuer(ctx, nil, issuer)
	if err != nil {
		t.Fatal(err)
	}
	jv, err := auth.NewJWTVerifier(auth.JWTOptions{JWKSURL: md.JWKSURI, Issuer: issuer, Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	verifier := auth.TokenVerifierFunc(func(ctx context.Context, raw string) (*auth.Token, error) {
		tok, err := jv.VerifyToken(ctx, raw)
		if err == nil && !st.now().Before(tok.ExpiresAt) {
			return nil, fmt.Errorf("%w: expired", auth.ErrInvalidToken)
		}
		return tok, err
	})
	authn, err := auth.NewAuthenticator(auth.Options{Verifier: verifier, Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.MountProtectedResourceMetadata(mux, &auth.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"mcp:tools", "mcp:deploy"},
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "rs", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	type noArgs struct{}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "whoami"}, func(_ context.Context, e *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
		return e.AuthContext.Subject + " " + strings.Join(e.AuthContext.Scopes, ","), nil
	}); err != nil {
		t.Fatal(err)
	}
	deploys := &atomic.Int64{}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "deploy", Scopes: []string{"mcp:deploy"}}, func(_ context.Context, e *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
		deploys.Add(1)
		return "deployed by " + e.AuthContext.Subject, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate, InsufficientScope: authn.InsufficientScope})
	t.Cleanup(func() { _ = h.Close() })
	mux.Handle("/mcp", log.wrap(h))

	return log, deploys
}
