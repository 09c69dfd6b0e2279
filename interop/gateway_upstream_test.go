package interop

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/oauth"
	"github.com/gopmcp/pmcp/oauthclient"
	"github.com/gopmcp/pmcp/proxy"
)

// exchangeStorage is ccStorage with RFC 8693 token exchange
// (op.TokenExchangeStorage): a client listed in exchangers may exchange an
// access token the provider issued for an access token of the same
// subject, for its own audience (the one audience it may name) and the
// scopes it may ask for.
type exchangeStorage struct {
	*ccStorage
	exchangers []string
}

func (s *exchangeStorage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	if !slices.Contains(s.exchangers, req.GetClientID()) {
		return oidc.ErrAccessDenied().WithDescription("client %s may not exchange tokens", req.GetClientID())
	}
	if req.GetRequestedTokenType() == "" {
		req.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if req.GetRequestedTokenType() != oidc.AccessTokenType || req.GetExchangeSubjectTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are exchanged, for access tokens")
	}
	c := s.clients[req.GetClientID()]
	if aud := req.GetAudience(); len(aud) != 1 || aud[0] != c.audience {
		return oidc.ErrInvalidTarget().WithDescription("audience %v is not %s", aud, c.audience)
	}
	for _, sc := range req.GetScopes() {
		if !c.IsScopeAllowed(sc) {
			return oidc.ErrInvalidScope().WithDescription("scope %s is not allowed for %s", sc, c.id)
		}
	}
	return nil
}

func (s *exchangeStorage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

func (s *exchangeStorage) GetPrivateClaimsFromTokenExchangeRequest(ctx context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	return s.GetPrivateClaimsFromScopes(ctx, req.GetSubject(), req.GetClientID(), req.GetScopes())
}

func (s *exchangeStorage) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return nil
}

var _ op.TokenExchangeStorage = (*exchangeStorage)(nil)

// startExchangeProvider runs the provider with st on loopback and returns
// its issuer and a counter of the requests to its token endpoint.
func startExchangeProvider(t *testing.T, st *exchangeStorage) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey}, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	var tokenRequests atomic.Int64
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/token") {
			tokenRequests.Add(1)
		}
		provider.ServeHTTP(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer, &tokenRequests
}

// TestGatewayUpstreamCredentials: a proxy whose HTTP upstream is a
// resource server (pmcp behind auth.Authenticator, verifying the JWTs of
// zitadel/oidc's op) authenticates with its own token, from
// oauthclient.ClientCredentials or oauthclient.TokenExchange (a workload's
// access token exchanged for one to the upstream), never with the
// caller's: the upstream's tool sees the gateway's subject (the workload's
// for the exchange) and scope. A token the upstream refuses (revoked) is
// replaced once and the call succeeds; when the authorization server only
// issues tokens the upstream refuses (expired at issue), the call fails
// with -32603 naming the upstream and the refusal, after one new token.
// Both downstream eras.
func TestGatewayUpstreamCredentials(t *testing.T) {
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	resource := rs.URL + "/mcp"
	cc, err := newCCStorage(
		&ccClient{id: "gateway", secret: "gateway-secret", audience: resource, scopes: []string{"mcp:tools"}},
		&ccClient{id: "workload", secret: "workload-secret", audience: "https://workload.example/", scopes: []string{"mcp:tools"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	st := &exchangeStorage{ccStorage: cc, exchangers: []string{"gateway"}}
	issuer, tokenRequests := startExchangeProvider(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The upstream: a resource server that can revoke tokens.
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
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate, InsufficientScope: authn.InsufficientScope})
	t.Cleanup(func() { _ = h.Close() })
	var (
		rmu     sync.Mutex
		revoked = map[string]bool{}
		last    string
		sent    []string
	)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		rmu.Lock()
		sent = append(sent, tok)
		last = tok
		refused := revoked[tok]
		rmu.Unlock()
		if refused {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="revoked"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	revokeLast := func() {
		rmu.Lock()
		revoked[last] = true
		rmu.Unlock()
	}

	// The workload's identity token, as a file or the environment would
	// hold it.
	workload := pmcp.Secret(ccToken(t, md.TokenEndpoint, "workload", "mcp:tools"))
	workloadToken := func(context.Context) (pmcp.Secret, error) { return workload, nil }
	ccSource, err := oauthclient.NewClientCredentials(oauthclient.ClientCredentials{Issuer: issuer, ClientID: "gateway", ClientSecret: "gateway-secret", Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	xSource, err := oauthclient.NewTokenExchange(oauthclient.TokenExchange{Issuer: issuer, ClientID: "gateway", ClientSecret: "gateway-secret", SubjectToken: workloadToken,
		SubjectTokenType: "access_token", Audience: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		authz   pmcp.HTTPAuthorizer
		subject string
	}{
		{"client-credentials", ccSource, "gateway"},
		{"token-exchange", xSource, "workload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := tokenRequests.Load()
			st.clock.Store(0)
			p, err := proxy.New(proxy.Options{Upstreams: []proxy.Upstream{{Name: "up", Dial: proxy.HTTP(resource, pmcp.HTTPClientOptions{Authorizer: c.authz})}}, Prefix: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			dh := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
			ds := httptest.NewServer(dh)
			t.Cleanup(func() {
				_ = dh.Close()
				ds.Close()
			})
			for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
				cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).ConnectHTTP(ctx, ds.URL, pmcp.HTTPClientOptions{
					Header: http.Header{"Authorization": {"Bearer the-callers-own-token"}}})
				if err != nil {
					t.Fatal(err)
				}
				res, err := cs.CallTool(ctx, "up_whoami", map[string]any{})
				if err != nil || res.Content[0].(*pmcp.TextContent).Text != c.subject+" mcp:tools" {
					t.Fatalf("%v: up_whoami: %+v %v", era, res, err)
				}
				_ = cs.Close()
			}
			if n := tokenRequests.Load() - before; n != 1 {
				t.Fatalf("%d token requests for the sessions of both eras, want 1 (one token shared)", n)
			}
			rmu.Lock()
			for _, tok := range sent {
				if tok == "the-callers-own-token" || tok == "" {
					t.Fatalf("the upstream got the token %q", tok)
				}
			}
			rmu.Unlock()

			cs, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, ds.URL, pmcp.HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// Revoked: one new token, and the call succeeds.
			revokeLast()
			before = tokenRequests.Load()
			if _, err := cs.CallTool(ctx, "up_whoami", map[string]any{}); err != nil {
				t.Fatalf("after a revocation: %v", err)
			}
			const want = 1
			if n := tokenRequests.Load() - before; n != want {
				t.Fatalf("%d token requests after a revocation, want %d", n, want)
			}
			// The provider issues expired tokens: one new one, then a
			// clear error naming the upstream.
			st.clock.Store(int64(-time.Hour))
			revokeLast()
			before = tokenRequests.Load()
			_, err = cs.CallTool(ctx, "up_whoami", map[string]any{})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "up"`) ||
				!strings.Contains(je.Message, "refused a token just obtained") {
				t.Fatalf("with tokens the upstream refuses: %v", err)
			}
			if n := tokenRequests.Load() - before; n != want {
				t.Fatalf("%d token requests for a refused call, want %d", n, want)
			}
		})
	}
}
