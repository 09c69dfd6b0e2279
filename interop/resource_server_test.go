package interop

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/oauth"
)

// startCCProvider runs a zitadel/oidc OpenID provider on loopback with
// the client-credentials storage of as_storage_test.go and returns its
// issuer and token endpoint (read from its discovery document).
func startCCProvider(t *testing.T, clients ...*ccClient) (issuer, tokenURL string) {
	t.Helper()
	st, err := newCCStorage(clients...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer = "http://" + ln.Addr().String()
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey}, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: provider}}
	srv.Start()
	t.Cleanup(srv.Close)

	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		TokenEndpoint string   `json:"token_endpoint"`
		GrantTypes    []string `json:"grant_types_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.TokenEndpoint == "" {
		t.Fatalf("discovery: %+v %v", doc, err)
	}
	return issuer, doc.TokenEndpoint
}

// token obtains an access token from the provider's token endpoint with
// the client credentials grant.
func ccToken(t *testing.T, tokenURL, clientID, scope string) string {
	t.Helper()
	cfg := clientcredentials.Config{ClientID: clientID, ClientSecret: clientID + "-secret", TokenURL: tokenURL,
		Scopes: strings.Fields(scope), AuthStyle: oauth2.AuthStyleInHeader}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, err := cfg.Token(ctx)
	if err != nil {
		t.Fatalf("token for %s (%s): %v", clientID, scope, err)
	}
	return tok.AccessToken
}

// The resource server end to end against a real authorization server
// (zitadel/oidc's op, in this process, issuing JWT access tokens with
// the client credentials grant): pmcp's StreamableHTTPHandler behind
// auth.Authenticator, whose JWT verifier finds the provider's keys
// through its metadata, and pmcp.Client carrying the tokens:
//
//   - a good token calls a tool in each era, and the tool sees the
//     token's subject and scopes;
//   - a token minted for another resource gets 401 invalid_token;
//   - a tool registered with Scopes answers a token lacking them 403
//     insufficient_scope naming every scope needed, and the token the
//     client then obtains for exactly those scopes succeeds (step-up);
//   - a legacy session opened with alice's token answers bob's 404.
func TestResourceServerAgainstZitadel(t *testing.T) {
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	resource := rs.URL + "/mcp"
	issuer, tokenURL := startCCProvider(t,
		&ccClient{id: "alice", secret: "alice-secret", audience: resource, scopes: []string{"mcp:tools", "mcp:deploy"}},
		&ccClient{id: "bob", secret: "bob-secret", audience: resource, scopes: []string{"mcp:tools"}},
		&ccClient{id: "elsewhere", secret: "elsewhere-secret", audience: "https://other.example.com/mcp", scopes: []string{"mcp:tools"}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The resource server.
	md, err := oauth.DiscoverAuthServer(ctx, nil, issuer, oauth.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := auth.NewJWTVerifier(auth.JWTOptions{JWKSURL: md.JWKSURI, Issuer: issuer, Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Options{Verifier: verifier, Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.MountProtectedResourceMetadata(mux, &oauth.ProtectedResourceMetadata{
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
	var deploys atomic.Int64
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "deploy", Scopes: []string{"mcp:deploy"}}, func(_ context.Context, e *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
		deploys.Add(1)
		return "deployed by " + e.AuthContext.Subject, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate, InsufficientScope: authn.InsufficientScope})
	t.Cleanup(func() { _ = h.Close() })
	mux.Handle("/mcp", h)

	connect := func(t *testing.T, era pmcp.Era, tok string) (*pmcp.ClientSession, error) {
		t.Helper()
		s, err := pmcp.NewClient(pmcp.ClientOptions{Name: "rs-e2e", Era: era}).ConnectHTTP(ctx, resource, pmcp.HTTPClientOptions{
			Header: http.Header{"Authorization": {"Bearer " + tok}}, NoStandaloneStream: true,
		})
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	}
	text := func(res *pmcp.CallToolResult) string { return res.Content[0].(*pmcp.TextContent).Text }

	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(fmt.Sprint(era), func(t *testing.T) {
			s, err := connect(t, era, ccToken(t, tokenURL, "alice", "mcp:tools"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.CallTool(ctx, "whoami", map[string]any{})
			if err != nil || text(res) != "alice mcp:tools" {
				t.Fatalf("whoami: %+v %v", res, err)
			}

			// Missing scope: 403 with every scope the call needs.
			_, err = s.CallTool(ctx, "deploy", map[string]any{})
			var se *pmcp.HTTPStatusError
			if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
				t.Fatalf("deploy without the scope: %v", err)
			}
			wantCh := `Bearer resource_metadata="` + authn.ResourceMetadataURL() + `", scope="mcp:tools mcp:deploy", error="insufficient_scope", error_description="the request needs scope mcp:tools mcp:deploy"`
			if se.WWWAuthenticate != wantCh {
				t.Fatalf("challenge %q\nwant      %q", se.WWWAuthenticate, wantCh)
			}
			if deploys.Load() != 0 {
				t.Fatal("the tool ran without its scope")
			}
			// Step-up: the client asks the authorization server for exactly
			// the challenge's scopes.
			scope := strings.TrimSuffix(strings.SplitN(strings.SplitN(se.WWWAuthenticate, `scope="`, 2)[1], `"`, 2)[0], " ")
			s2, err := connect(t, era, ccToken(t, tokenURL, "alice", scope))
			if err != nil {
				t.Fatal(err)
			}
			res, err = s2.CallTool(ctx, "deploy", map[string]any{})
			if err != nil || text(res) != "deployed by alice" || deploys.Load() != 1 {
				t.Fatalf("deploy after step-up: %+v %v", res, err)
			}
			deploys.Store(0)
		})
	}

	// A token the same authorization server minted for another resource.
	_, err = connect(t, pmcp.EraModern, ccToken(t, tokenURL, "elsewhere", "mcp:tools"))
	var se *pmcp.HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized || !strings.Contains(se.WWWAuthenticate, `error="invalid_token"`) {
		t.Fatalf("token for another resource: %v", err)
	}
	// The authorization server refuses bob the deploy scope, so he cannot
	// step up.
	cfg := clientcredentials.Config{ClientID: "bob", ClientSecret: "bob-secret", TokenURL: tokenURL, Scopes: []string{"mcp:tools", "mcp:deploy"}}
	if _, err := cfg.Token(ctx); err == nil || !strings.Contains(err.Error(), "invalid_scope") {
		t.Fatalf("bob got mcp:deploy: %v", err)
	}

	// Alice's legacy session, replayed with bob's token: 404, as unknown.
	alice, err := connect(t, pmcp.EraLegacy, ccToken(t, tokenURL, "alice", "mcp:tools"))
	if err != nil {
		t.Fatal(err)
	}
	sid := alice.SessionID()
	if sid == "" {
		t.Fatal("no legacy session id")
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
	if got := post(ccToken(t, tokenURL, "bob", "mcp:tools")); got != http.StatusNotFound {
		t.Fatalf("bob's token on alice's session: %d, want 404", got)
	}
	if got := post(ccToken(t, tokenURL, "alice", "mcp:tools")); got != http.StatusOK {
		t.Fatalf("alice's new token on her session: %d", got)
	}
}
