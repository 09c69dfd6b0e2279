package interop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauthclient"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// zitadelRedirect is the web client's registered redirect URI; nothing
// listens there: the test's user agent stops at the redirect.
const zitadelRedirect = "http://localhost:9999/auth/callback"

// startZitadel runs the zitadel/oidc example OpenID provider (a certified
// OP library) with one pre-registered web client "web"/"secret".
func startZitadel(t *testing.T) (issuer string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer = "http://" + ln.Addr().String()
	st := storage.NewStorageWithClients(storage.NewUserStore(issuer), map[string]*storage.Client{
		"web": storage.WebClient("web", "secret", zitadelRedirect),
	})
	// SetupServer makes the logger the process default; discard it.
	router := exampleop.SetupServer(issuer, st, slog.New(slog.DiscardHandler), false)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: router}}
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

// protectedMCP serves a go-sdk MCP server behind bearer-token checking:
// a token is valid when the OP's userinfo endpoint accepts it. reject,
// when set, makes the next request with the current token fail once (as
// if it had expired).
type protectedMCP struct {
	issuer string
	srv    *httptest.Server
	next   http.Handler

	mu       sync.Mutex
	rejected map[string]bool
	reject   bool
	tokens   []string
}

func newProtectedMCP(t *testing.T, issuer string) *protectedMCP {
	t.Helper()
	s := newGoSDKServer()
	p := &protectedMCP{
		issuer:   issuer,
		next:     gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, &gosdk.StreamableHTTPOptions{Stateless: true}),
		rejected: map[string]bool{},
	}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *protectedMCP) url() string { return p.srv.URL + "/mcp" }

func (p *protectedMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prm := p.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q],"scopes_supported":["openid"]}`, p.url(), p.issuer)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	if ok && p.reject && !p.rejected[tok] {
		p.reject, p.rejected[tok] = false, true
	}
	bad := p.rejected[tok]
	p.mu.Unlock()
	if !ok || bad || !p.userinfo(r.Context(), tok) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q`, prm))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	p.mu.Lock()
	if len(p.tokens) == 0 || p.tokens[len(p.tokens)-1] != tok {
		p.tokens = append(p.tokens, tok)
	}
	p.mu.Unlock()
	p.next.ServeHTTP(w, r)
}

func (p *protectedMCP) userinfo(ctx context.Context, tok string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.issuer+"/userinfo", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// zitadelLogin is the user agent: it follows the authorization request
// to the OP's login form, signs in as the example user and returns the
// redirect back to the client.
func zitadelLogin(issuer string) func(ctx context.Context, authURL string) (string, error) {
	host := strings.Split(strings.TrimPrefix(issuer, "http://"), ":")[0]
	return func(ctx context.Context, authURL string) (string, error) {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		next := func(resp *http.Response, err error) (*url.URL, error) {
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			return resp.Location()
		}
		get := func(u string) (*url.URL, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return nil, err
			}
			return next(c.Do(req))
		}
		login, err := get(authURL)
		if err != nil {
			return "", fmt.Errorf("authorize: %w", err)
		}
		id := login.Query().Get("authRequestID")
		if id == "" {
			return "", errors.New("no authRequestID in " + login.String())
		}
		form := url.Values{"id": {id}, "username": {"test-user@" + host}, "password": {"verysecure"}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, issuer+"/login/username", strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		callback, err := next(c.Do(req))
		if err != nil {
			return "", fmt.Errorf("login: %w", err)
		}
		back, err := get(login.ResolveReference(callback).String())
		if err != nil {
			return "", fmt.Errorf("callback: %w", err)
		}
		return back.String(), nil
	}
}

// TestOAuthAgainstZitadel runs pmcp's OAuth client end to end against a
// real OpenID provider: discovery (the OP serves only OpenID metadata),
// the pre-registered client with client_secret_basic, PKCE, the
// authorization code grant, and a refresh after the resource server
// rejects the first token.
func TestOAuthAgainstZitadel(t *testing.T) {
	issuer := startZitadel(t)
	mcp := newProtectedMCP(t, issuer)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var authorizations int
	login := zitadelLogin(issuer)
	store := &oauthclient.MemoryTokenStore{}
	cfg := &oauthclient.Config{
		ClientID: "web", ClientSecret: "secret", RedirectURL: zitadelRedirect,
		Authorize: func(ctx context.Context, u string) (string, error) {
			authorizations++
			return login(ctx, u)
		},
		TokenStore: store,
	}
	c := pmcp.NewClient(pmcp.ClientOptions{})
	s, err := c.ConnectHTTP(ctx, mcp.url(), pmcp.HTTPClientOptions{Authorizer: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AllTools(ctx); err != nil {
		t.Fatal(err)
	}
	mcp.mu.Lock()
	mcp.reject = true
	mcp.mu.Unlock()
	res, err := s.CallTool(ctx, "add", map[string]any{"a": 2, "b": 3})
	if err != nil || res.IsError {
		t.Fatalf("add: %v %+v", err, res)
	}
	mcp.mu.Lock()
	tokens := len(mcp.tokens)
	mcp.mu.Unlock()
	if authorizations != 1 || tokens != 2 {
		t.Fatalf("%d authorizations and %d distinct tokens; want 1 (then a refresh) and 2", authorizations, tokens)
	}
	creds, err := store.Load(ctx, oauthclient.TokenKey{Resource: mcp.url(), Issuer: issuer})
	if err != nil || creds == nil || creds.RefreshToken == "" {
		t.Fatalf("stored credentials: %v, refresh token present %v", err, creds != nil && creds.RefreshToken != "")
	}
}
