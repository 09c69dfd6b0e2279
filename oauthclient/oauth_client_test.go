package oauthclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauth"
)

const testRedirect = "http://127.0.0.1:1/callback"

func baseConfig() *Config {
	return &Config{RedirectURL: testRedirect, Authorize: autoApprove}
}

// oauthClient returns an http.Client whose transport runs the OAuth flow
// against f with cfg.
func oauthClient(t *testing.T, f *fakeAS, cfg *Config) (*http.Client, *oauthTransport) {
	t.Helper()
	if err := validateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	ot, err := newOAuthTransport(base, cfg, f.url(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: ot}, ot
}

// call posts an MCP request for method and returns the status and body.
func call(t *testing.T, c *http.Client, url, method string) (int, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func mustCall(t *testing.T, c *http.Client, f *fakeAS, method string) {
	t.Helper()
	status, body, err := call(t, c, f.url(), method)
	if err != nil || status != 200 || body != "ok "+method {
		t.Fatalf("%s: status %d body %q err %v", method, status, body, err)
	}
}

func TestOAuthAuthorizationCodeFlow(t *testing.T) {
	f := newFakeAS(t)
	f.challengeScope = "mcp:read"
	c, _ := oauthClient(t, f, baseConfig())
	mustCall(t, c, f, "tools/list")
	mustCall(t, c, f, "tools/call") // the token is reused: no second flow

	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.authorizes) != 1 || len(f.tokenReqs) != 1 || len(f.registers) != 1 {
		t.Fatalf("authorizes %d, token requests %d, registrations %d; want 1 each", len(f.authorizes), len(f.tokenReqs), len(f.registers))
	}
	a := f.authorizes[0]
	for k, want := range map[string]string{
		"response_type": "code", "code_challenge_method": "S256", "resource": f.url(),
		"scope": "mcp:read", "redirect_uri": testRedirect, "client_id": "client-1",
	} {
		if a.Get(k) != want {
			t.Errorf("authorization request %s = %q, want %q", k, a.Get(k), want)
		}
	}
	form := f.tokenReqs[0].form
	if form.Get("resource") != f.url() || form.Get("grant_type") != "authorization_code" || form.Get("client_id") != "client-1" {
		t.Errorf("token request %v", form)
	}
	reg := f.registers[0]
	if reg["application_type"] != "native" || !slices.Contains(anyStrings(reg["grant_types"]), "refresh_token") {
		t.Errorf("registration %v", reg)
	}
}

func anyStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestOAuthEndToEndConnectHTTP(t *testing.T) {
	f := newFakeAS(t)
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "oauth-e2e", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "plain"}, func(context.Context, *pmcp.RequestHandlerExtra, struct{}) (struct{}, error) {
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	defer func() { _ = h.Close() }()
	var mu sync.Mutex
	var seen []http.Header
	f.mcp = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}
	c := pmcp.NewClient(pmcp.ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.ConnectHTTP(ctx, f.url(), pmcp.HTTPClientOptions{Authorizer: baseConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AllTools(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, hdr := range seen {
		if !strings.HasPrefix(hdr.Get("Authorization"), "Bearer tok-") {
			t.Fatalf("a request reached the server without the token: %v", hdr)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("the server saw %d requests", len(seen))
	}
	// Without OAuth the same server is pmcp.ErrAuthorizationRequired.
	if _, err := c.ConnectHTTP(ctx, f.url(), pmcp.HTTPClientOptions{}); !errors.Is(err, pmcp.ErrAuthorizationRequired) {
		t.Fatalf("without OAuth: %v", err)
	}
	// So it is with a nil *Config as Authorizer.
	var none *Config
	if _, err := c.ConnectHTTP(ctx, f.url(), pmcp.HTTPClientOptions{Authorizer: none}); !errors.Is(err, pmcp.ErrAuthorizationRequired) {
		t.Fatalf("with a nil *Config: %v", err)
	}
}

// TestOAuthDiscoveryOrder checks where protected resource metadata and
// authorization server metadata are looked for, and in which order.
func TestOAuthDiscoveryOrder(t *testing.T) {
	var mu sync.Mutex
	var hits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ctx := context.Background()
	ep, _ := url.Parse(srv.URL + "/public/mcp")
	prm, err := oauth.DiscoverProtectedResource(ctx, srv.Client(), ep.String(), srv.URL+"/custom/prm.json")
	if prm != nil || err != nil {
		t.Fatalf("DiscoverProtectedResource = %v, %v", prm, err)
	}
	_, err = discoverAS(ctx, srv.Client(), srv.URL+"/tenant1", false)
	if !errors.Is(err, ErrMetadata) {
		t.Fatalf("discoverAS: %v", err)
	}
	_, err = discoverAS(ctx, srv.Client(), srv.URL, false)
	if !errors.Is(err, ErrMetadata) {
		t.Fatalf("discoverAS: %v", err)
	}
	want := []string{
		"/custom/prm.json",
		"/.well-known/oauth-protected-resource/public/mcp",
		"/.well-known/oauth-protected-resource",
		"/.well-known/oauth-authorization-server/tenant1",
		"/.well-known/openid-configuration/tenant1",
		"/tenant1/.well-known/openid-configuration",
		"/.well-known/oauth-authorization-server",
		"/.well-known/openid-configuration",
	}
	if !slices.Equal(hits, want) {
		t.Fatalf("order:\n got %q\nwant %q", hits, want)
	}
}

func TestOAuthResourceMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": "https://other.example/mcp", "authorization_servers": []string{"https://as.example"}})
	}))
	defer srv.Close()
	ep, _ := url.Parse(srv.URL + "/mcp")
	if _, err := oauth.DiscoverProtectedResource(context.Background(), srv.Client(), ep.String(), ""); !errors.Is(err, pmcp.ErrResourceMismatch) {
		t.Fatalf("err = %v, want pmcp.ErrResourceMismatch", err)
	}
}

func TestOAuthMetadataIssuerMismatch(t *testing.T) {
	f := newFakeAS(t)
	f.metaOverride = map[string]any{"issuer": "https://attacker.example"}
	c, _ := oauthClient(t, f, baseConfig())
	_, _, err := call(t, c, f.url(), "tools/list")
	if !errors.Is(err, ErrIssuerMismatch) {
		t.Fatalf("err = %v, want ErrIssuerMismatch", err)
	}
	if n := f.count("POST /register") + f.count("GET /authorize") + f.count("POST /token"); n != 0 {
		t.Fatalf("%d requests went to the endpoints of the rejected metadata", n)
	}
}

func TestOAuthPKCERequired(t *testing.T) {
	f := newFakeAS(t)
	f.metaDrop = []string{"code_challenge_methods_supported"}
	c, _ := oauthClient(t, f, baseConfig())
	if _, _, err := call(t, c, f.url(), "tools/list"); !errors.Is(err, ErrPKCEUnsupported) {
		t.Fatalf("err = %v, want ErrPKCEUnsupported", err)
	}
	if n := f.count("GET /authorize"); n != 0 {
		t.Fatalf("%d authorization requests without PKCE support", n)
	}
}

// TestOAuthIssTable runs the RFC 9207 table: the advertised flag against
// the presence of iss, plus the wrong and the normalisation-equal values.
func TestOAuthIssTable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		advertised bool
		mode       string
		ok         bool
	}{
		{"advertised+present", true, "", true},
		{"advertised+missing", true, "omit", false},
		{"unadvertised+present", false, "", true},
		{"unadvertised+missing", false, "omit", true},
		{"advertised+wrong", true, "wrong", false},
		{"unadvertised+wrong", false, "wrong", false},
		{"trailing slash", true, "slash", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.issMode = tc.mode
			if !tc.advertised {
				f.metaDrop = []string{"authorization_response_iss_parameter_supported"}
			}
			c, _ := oauthClient(t, f, baseConfig())
			_, _, err := call(t, c, f.url(), "tools/list")
			tokens := f.count("POST /token")
			if tc.ok && (err != nil || tokens != 1) {
				t.Fatalf("err %v, %d token requests; want success", err, tokens)
			}
			if !tc.ok && (!errors.Is(err, ErrIssuerMismatch) || tokens != 0) {
				t.Fatalf("err %v, %d token requests; want ErrIssuerMismatch and none", err, tokens)
			}
		})
	}
}

// TestOAuthIssCheckedOnErrorResponse: an error response with a foreign
// iss is an issuer mismatch, not the (attacker's) OAuth error.
func TestOAuthIssCheckedOnErrorResponse(t *testing.T) {
	o := &oauthTransport{cfg: &Config{RedirectURL: testRedirect}}
	meta := &oauth.AuthServerMetadata{Issuer: "https://as.example"}
	_, err := o.checkAuthorizationResponse(meta, testRedirect+"?error=access_denied&error_description=click+here&state=s&iss=https://evil.example", "s")
	var oe *Error
	if !errors.Is(err, ErrIssuerMismatch) || errors.As(err, &oe) || strings.Contains(err.Error(), "click") {
		t.Fatalf("err = %v", err)
	}
	_, err = o.checkAuthorizationResponse(meta, testRedirect+"?code=c&state=other", "s")
	if !errors.Is(err, ErrAuthorizationResponse) {
		t.Fatalf("state mismatch: %v", err)
	}
	_, err = o.checkAuthorizationResponse(meta, "http://evil.example/callback?code=c&state=s", "s")
	if !errors.Is(err, ErrAuthorizationResponse) {
		t.Fatalf("foreign redirect: %v", err)
	}
}

func TestOAuthScopeSelection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		challenge string
		prm       []string
		asScopes  []string
		want      string
	}{
		{"challenge", "a b", []string{"x"}, nil, "a b"},
		{"prm scopes_supported", "", []string{"x", "y"}, nil, "x y"},
		{"none", "", nil, nil, ""},
		{"offline_access listed", "a", nil, []string{"a", "offline_access"}, "a offline_access"},
		{"offline_access not listed is dropped", "a offline_access", nil, []string{"a"}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.challengeScope, f.prmScopes = tc.challenge, tc.prm
			if tc.asScopes != nil {
				f.metaOverride = map[string]any{"scopes_supported": tc.asScopes}
			}
			c, _ := oauthClient(t, f, baseConfig())
			mustCall(t, c, f, "tools/list")
			f.mu.Lock()
			defer f.mu.Unlock()
			q := f.authorizes[0]
			if got := q.Get("scope"); got != tc.want || (tc.want == "" && q.Has("scope")) {
				t.Fatalf("scope = %q (present %v), want %q", got, q.Has("scope"), tc.want)
			}
		})
	}
}

// TestOAuthStepUpUnionAndLimit: a 403 insufficient_scope re-authorizes
// with the union of the scopes; a server that always refuses gets at most
// MaxAuthorizations authorizations for one request.
func TestOAuthStepUpUnionAndLimit(t *testing.T) {
	f := newFakeAS(t)
	f.challengeScope = "mcp:basic"
	f.required = map[string]string{"tools/call": "mcp:write"}
	c, _ := oauthClient(t, f, baseConfig())
	mustCall(t, c, f, "tools/list")
	mustCall(t, c, f, "tools/call")
	f.mu.Lock()
	if len(f.authorizes) != 2 || f.authorizes[1].Get("scope") != "mcp:write mcp:basic" {
		t.Fatalf("authorizations %d, step-up scope %q", len(f.authorizes), f.authorizes[len(f.authorizes)-1].Get("scope"))
	}
	f.mu.Unlock()

	g := newFakeAS(t)
	g.always403 = true
	gc, _ := oauthClient(t, g, baseConfig())
	status, _, err := call(t, gc, g.url(), "tools/list")
	if err != nil || status != 403 {
		t.Fatalf("status %d err %v, want the final 403", status, err)
	}
	if n := g.count("GET /authorize"); n != defaultMaxAuthorizations {
		t.Fatalf("%d authorizations, want %d", n, defaultMaxAuthorizations)
	}
	// A 403 that is not insufficient_scope is not stepped up.
	h := newFakeAS(t)
	h.mcp = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "forbidden", 403) }
	hc, _ := oauthClient(t, h, baseConfig())
	if status, _, _ := call(t, hc, h.url(), "tools/list"); status != 403 || h.count("GET /authorize") != 1 {
		t.Fatalf("status %d, %d authorizations", status, h.count("GET /authorize"))
	}
}

// TestOAuthRefreshAndInvalidGrant: a rejected token is refreshed without
// a new authorization; a refresh token refused with invalid_grant is
// cleared from the store and the client authorizes again.
func TestOAuthRefreshAndInvalidGrant(t *testing.T) {
	f := newFakeAS(t)
	f.issueRefresh = true
	store := &MemoryTokenStore{}
	cfg := baseConfig()
	cfg.TokenStore = store
	c, ot := oauthClient(t, f, cfg)
	mustCall(t, c, f, "tools/list")
	revoke := func() {
		f.set(func() { clear(f.tokens) })
	}
	revoke()
	mustCall(t, c, f, "tools/list")
	if a, r := f.count("GET /authorize"), countGrant(f, "refresh_token"); a != 1 || r != 1 {
		t.Fatalf("after expiry: %d authorizations, %d refreshes; want 1, 1", a, r)
	}
	revoke()
	f.set(func() { f.refreshError = "invalid_grant"; f.issueRefresh = false })
	mustCall(t, c, f, "tools/list")
	if a, r := f.count("GET /authorize"), countGrant(f, "refresh_token"); a != 2 || r != 2 {
		t.Fatalf("after invalid_grant: %d authorizations, %d refreshes; want 2, 2", a, r)
	}
	ot.mu.Lock()
	key := ot.key
	ot.mu.Unlock()
	creds, _ := store.Load(context.Background(), key)
	if creds == nil || creds.RefreshToken != "" || creds.AccessToken == "" || creds.ClientID == "" {
		t.Fatalf("stored credentials after invalid_grant: refresh %v access %v client %q", creds.RefreshToken != "", creds.AccessToken != "", creds.ClientID)
	}
}

func countGrant(f *fakeAS, grant string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.tokenReqs {
		if r.form.Get("grant_type") == grant {
			n++
		}
	}
	return n
}

// TestOAuthASMigration: when the protected resource metadata names a new
// authorization server, the client registers there and never presents
// the old client id.
func TestOAuthASMigration(t *testing.T) {
	f := newFakeAS(t)
	f.as = "/as1"
	c, _ := oauthClient(t, f, baseConfig())
	mustCall(t, c, f, "tools/list")
	f.set(func() { f.as = "/as2" })
	mustCall(t, c, f, "tools/list")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.registers) != 2 {
		t.Fatalf("%d registrations, want one per authorization server", len(f.registers))
	}
	var as1Client string
	for _, q := range f.authorizes {
		if strings.HasPrefix(q.Get("client_id"), "client-as1") {
			as1Client = q.Get("client_id")
		}
	}
	for _, r := range f.tokenReqs {
		if r.as == "/as2" && (r.form.Get("client_id") == as1Client || r.basic == as1Client) {
			t.Fatalf("the as1 client id %q was presented to as2", as1Client)
		}
	}
	last := f.authorizes[len(f.authorizes)-1]
	if !strings.HasPrefix(last.Get("client_id"), "client-as2") {
		t.Fatalf("authorization at as2 with client %q", last.Get("client_id"))
	}
}

func TestOAuthTokenEndpointAuthMethods(t *testing.T) {
	for _, tc := range []struct {
		listed []string
		want   string
	}{
		{[]string{"client_secret_basic"}, "basic"},
		{[]string{"client_secret_post"}, "post"},
		{[]string{"none"}, "none"},
		{nil, "basic"}, // RFC 8414 default
	} {
		t.Run(fmt.Sprint(tc.listed), func(t *testing.T) {
			f := newFakeAS(t)
			f.metaOverride = map[string]any{"token_endpoint_auth_methods_supported": tc.listed}
			if tc.listed == nil {
				f.metaDrop = []string{"token_endpoint_auth_methods_supported"}
				f.metaOverride = nil
			}
			cfg := baseConfig()
			cfg.ClientID, cfg.ClientSecret = "pre", "s3cret"
			c, _ := oauthClient(t, f, cfg)
			mustCall(t, c, f, "tools/list")
			f.mu.Lock()
			defer f.mu.Unlock()
			r := f.tokenReqs[0]
			got := "none"
			switch {
			case r.basic == "pre":
				got = "basic"
			case r.form.Get("client_secret") == "s3cret":
				got = "post"
			}
			if got != tc.want || len(f.registers) != 0 {
				t.Fatalf("auth method %s, want %s (registrations %d)", got, tc.want, len(f.registers))
			}
		})
	}
}

func TestOAuthClientIDMetadataDocument(t *testing.T) {
	f := newFakeAS(t)
	f.metaOverride = map[string]any{"client_id_metadata_document_supported": true}
	cfg := baseConfig()
	cfg.ClientMetadataURL = "https://client.example/meta.json"
	c, _ := oauthClient(t, f, cfg)
	mustCall(t, c, f, "tools/list")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.authorizes[0].Get("client_id") != cfg.ClientMetadataURL || len(f.registers) != 0 {
		t.Fatalf("client_id %q, %d registrations", f.authorizes[0].Get("client_id"), len(f.registers))
	}
}

// TestOAuthClientCredentialsPrivateKeyJWTAndDPoP: the client credentials
// grant authenticates with a signed assertion whose audience is the
// issuer, and the DPoP proof at the token endpoint verifies with its own
// jwk header.
func TestOAuthClientCredentialsPrivateKeyJWTAndDPoP(t *testing.T) {
	f := newFakeAS(t)
	f.metaOverride = map[string]any{
		"token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
		"dpop_signing_alg_values_supported":     []string{"ES256"},
	}
	ck, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	dk, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cfg := &Config{Grant: GrantClientCredentials, ClientID: "svc", PrivateKey: ck, DPoPKey: dk}
	c, _ := oauthClient(t, f, cfg)
	mustCall(t, c, f, "tools/list")
	f.mu.Lock()
	r := f.tokenReqs[0]
	f.mu.Unlock()
	if r.form.Get("grant_type") != "client_credentials" || r.form.Get("client_assertion_type") != assertionTypeJWT {
		t.Fatalf("form %v", r.form)
	}
	tok, err := josejwt.ParseSigned(r.form.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("client assertion: %v", err)
	}
	var std josejwt.Claims
	if err := tok.Claims(&ck.PublicKey, &std); err != nil || std.Expiry == nil ||
		std.Validate(josejwt.Expected{Issuer: "svc", Subject: "svc", AnyAudience: josejwt.Audience{f.srv.URL}}) != nil {
		t.Fatalf("client assertion: %+v, %v", std, err)
	}
	proof := verifyDPoP(t, r.dpop)
	if proof["htm"] != "POST" || proof["htu"] != f.srv.URL+"/token" {
		t.Fatalf("proof claims %v", proof)
	}
}

// verifyDPoP checks a proof with the key of its own jwk header (a public
// P-256 key) and returns its claims.
func verifyDPoP(t *testing.T, proof string) map[string]any {
	t.Helper()
	jws, err := jose.ParseSigned(proof, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 {
		t.Fatalf("DPoP proof: %v", err)
	}
	h := jws.Signatures[0].Protected
	pub, _ := h.JSONWebKey.Key.(*ecdsa.PublicKey)
	if h.ExtraHeaders[jose.HeaderType] != "dpop+jwt" || !h.JSONWebKey.IsPublic() || pub == nil || pub.Curve != elliptic.P256() {
		t.Fatalf("DPoP proof header %+v", h)
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		t.Fatalf("DPoP proof: %v", err)
	}
	claims := map[string]any{}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if iat, _ := claims["iat"].(float64); iat == 0 || time.Unix(int64(iat), 0).After(time.Now().Add(time.Minute)) {
		t.Fatalf("DPoP proof iat %v", claims["iat"])
	}
	if j, _ := claims["jti"].(string); j == "" {
		t.Fatal("proof without jti")
	}
	return claims
}

func TestDPoPProofAndNonce(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d, err := newDPoPSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("https://rs.example/mcp?x=1#f")
	p1, _ := d.proof("POST", target, "tok", time.Now())
	c1 := verifyDPoP(t, p1)
	sum := sha256.Sum256([]byte("tok"))
	if c1["htu"] != "https://rs.example/mcp" || c1["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) || c1["nonce"] != nil {
		t.Fatalf("claims %v", c1)
	}
	if !d.setNonce(target, "n1") || d.setNonce(target, "n1") {
		t.Fatal("setNonce must report only a changed nonce")
	}
	p2, _ := d.proof("POST", target, "tok", time.Now())
	c2 := verifyDPoP(t, p2)
	if c2["nonce"] != "n1" || c2["jti"] == c1["jti"] {
		t.Fatalf("second proof %v", c2)
	}
	other, _ := url.Parse("https://as.example/token")
	if d.nonce(other) != "" {
		t.Fatal("nonces must be per origin")
	}
}

// TestOAuthJWTBearerNoRetry: a refused workload assertion is reported and
// never retried, by this request or later ones.
func TestOAuthJWTBearerNoRetry(t *testing.T) {
	f := newFakeAS(t)
	f.tokenError = "invalid_grant"
	cfg := &Config{Grant: GrantJWTBearer, ClientID: "wl",
		Assertion: func(context.Context) (pmcp.Secret, error) { return "a.b.c", nil }}
	c, _ := oauthClient(t, f, cfg)
	for range 2 {
		_, _, err := call(t, c, f.url(), "tools/list")
		var oe *Error
		if !errors.As(err, &oe) || oe.Code != "invalid_grant" {
			t.Fatalf("err = %v", err)
		}
	}
	if n := f.count("POST /token"); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

// An invalid configuration ends ConnectHTTP before any request.
func TestOAuthConfigValidation(t *testing.T) {
	var requests sync.Map
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Store(r.Method+" "+r.URL.Path, true)
		http.NotFound(w, r)
	}))
	defer ts.Close()
	for _, cfg := range []*Config{
		{},
		{Grant: GrantClientCredentials, ClientID: "x"},
		{Grant: GrantJWTBearer},
		{Grant: GrantEnterprise},
		{Grant: "magic"},
	} {
		_, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(context.Background(), ts.URL+"/mcp", pmcp.HTTPClientOptions{Authorizer: cfg})
		if err == nil || !strings.Contains(err.Error(), "oauthclient.Config") {
			t.Errorf("%+v: err = %v", cfg, err)
		}
	}
	requests.Range(func(k, _ any) bool {
		t.Errorf("request %s sent with an invalid configuration", k)
		return true
	})
}

func TestTokenStoreSecretsAndFile(t *testing.T) {
	c := &Credentials{ClientID: "id", ClientSecret: "cs-123", AccessToken: "at-456", RefreshToken: "rt-789", TokenType: "Bearer"}
	for _, s := range []string{fmt.Sprintf("%v %+v %#v", c, c, *c), fmt.Sprint(*c)} {
		for _, secret := range []string{"cs-123", "at-456", "rt-789"} {
			if strings.Contains(s, secret) {
				t.Fatalf("printed credentials contain %s: %s", secret, s)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "tokens.json")
	ctx := context.Background()
	key := TokenKey{Resource: "https://rs.example/mcp", Issuer: "https://as.example"}
	if err := NewFileTokenStore(path).Save(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, err %v", st.Mode(), err)
	}
	got, err := NewFileTokenStore(path).Load(ctx, key)
	if err != nil || got == nil || got.AccessToken != c.AccessToken || got.RefreshToken != c.RefreshToken || got.ClientSecret != c.ClientSecret {
		t.Fatalf("reloaded %+v, %v", got, err)
	}
	if other, _ := NewFileTokenStore(path).Load(ctx, TokenKey{Resource: key.Resource, Issuer: "https://as2.example"}); other != nil {
		t.Fatal("credentials of one issuer served for another")
	}
	m := &MemoryTokenStore{MaxEntries: 2}
	for i := range 3 {
		_ = m.Save(ctx, TokenKey{Issuer: fmt.Sprint(i)}, c)
	}
	if first, _ := m.Load(ctx, TokenKey{Issuer: "0"}); first != nil || len(m.entries) != 2 {
		t.Fatalf("MaxEntries not enforced: %d entries", len(m.entries))
	}
}

// TestOAuthTokenStaysOnOrigin: a redirect to another origin must not
// carry the token the transport attaches, nor start an authorization.
func TestOAuthTokenStaysOnOrigin(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+r.Host+`"`)
		w.WriteHeader(401)
	}))
	defer other.Close()
	f := newFakeAS(t)
	c, _ := oauthClient(t, f, baseConfig())
	mustCall(t, c, f, "tools/list")
	f.set(func() {
		f.mcp = func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
		}
	})
	status, _, err := call(t, c, f.url(), "tools/list")
	if err != nil || status != 401 {
		t.Fatalf("status %d, err %v", status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 1 || leaked[0] != "" {
		t.Fatalf("the other origin saw Authorization %q", leaked)
	}
	if n := f.count("GET /authorize"); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
}

// TestOAuthPreRegisteredNotReusedAfterMigration: pre-registered
// credentials stay with the authorization server they were first used
// with; after a move the client registers at the new one.
func TestOAuthPreRegisteredNotReusedAfterMigration(t *testing.T) {
	f := newFakeAS(t)
	f.as = "/as1"
	cfg := baseConfig()
	cfg.ClientID = "pre"
	c, _ := oauthClient(t, f, cfg)
	mustCall(t, c, f, "tools/list")
	f.set(func() { f.as = "/as2" })
	mustCall(t, c, f, "tools/list")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.tokenReqs {
		if r.as == "/as2" && (r.form.Get("client_id") == "pre" || r.basic == "pre") {
			t.Fatal("the pre-registered client id was presented to the new authorization server")
		}
	}
	if len(f.registers) != 1 {
		t.Fatalf("%d registrations, want 1 (at as2)", len(f.registers))
	}
}

// TestOAuthConfigNeverPrintsKeys: printing or logging a configuration
// shows no secret and no private key material.
func TestOAuthConfigNeverPrintsKeys(t *testing.T) {
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	cfg := Config{ClientID: "id", ClientSecret: "sekrit", PrivateKey: edKey, DPoPKey: edKey,
		Enterprise: &Enterprise{ClientSecret: "idp-sekrit"}}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "c", cfg, "p", &cfg)
	keyBytes := fmt.Sprint([]byte(edKey)[:8])
	keyBytes = keyBytes[1 : len(keyBytes)-1]
	for _, s := range []string{fmt.Sprintf("%v|%+v|%#v", cfg, cfg, cfg), fmt.Sprintf("%v|%+v", &cfg, &cfg), logged.String()} {
		if strings.Contains(s, "sekrit") || strings.Contains(s, keyBytes) {
			t.Fatalf("printed configuration leaks a secret: %s", s)
		}
	}
}

// TestOAuthTokenResponseExpiresInString: some servers send expires_in as
// a string; the token must still be accepted and its expiry known.
func TestOAuthTokenResponseExpiresInString(t *testing.T) {
	var tr tokenResponse
	for _, in := range []string{`{"access_token":"a","expires_in":"3600"}`, `{"access_token":"a","expires_in":3600}`, `{"access_token":"a","expires_in":3600.0}`} {
		tr = tokenResponse{}
		if err := json.Unmarshal([]byte(in), &tr); err != nil || tr.ExpiresIn != 3600 {
			t.Fatalf("%s: expires_in %d, err %v", in, tr.ExpiresIn, err)
		}
	}
	if err := json.Unmarshal([]byte(`{"access_token":"a","expires_in":"soon"}`), &tr); err == nil {
		t.Fatal("a non-numeric expires_in was accepted")
	}
}

// TestOAuthWaitingForFlowHonoursContext: a request that waits for
// another request's authorization (here stuck at the user agent) gives
// up when its own context ends.
func TestOAuthWaitingForFlowHonoursContext(t *testing.T) {
	f := newFakeAS(t)
	release := make(chan struct{})
	entered := make(chan struct{})
	cfg := baseConfig()
	cfg.Authorize = func(ctx context.Context, u string) (string, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return autoApprove(ctx, u)
	}
	c, _ := oauthClient(t, f, cfg)
	first := make(chan error, 1)
	go func() {
		_, _, err := call(t, c, f.url(), "tools/list")
		first <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url(), strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	start := time.Now()
	_, err := c.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("waiting request: err %v after %v", err, time.Since(start))
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first request: %v", err)
	}
}
