package interop

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// ccStorage is a small op.Storage for a zitadel/oidc OpenID provider
// that issues JWT access tokens (RFC 9068, with the granted scopes in
// "scope") with the client credentials grant (op.ClientCredentialsStorage;
// the token's subject is the client id) and with the authorization code
// grant with PKCE and refresh tokens (the subject is the user who signed
// in at the test's login page, see acLogin). Each client has a secret,
// the scopes it may ask for, and optionally a fixed audience; without one
// an authorization-code token is minted for the resource (RFC 8707) the
// authorization request named. Clients are native, so a loopback
// redirect URI matches with any port (RFC 8252 §7.3).
type ccStorage struct {
	clients map[string]*ccClient
	key     *rsa.PrivateKey
	keyID   string
	ids     atomic.Uint64

	// accessTTL is the lifetime of access tokens; zero means 5 minutes.
	accessTTL time.Duration
	// clock is added to the wall clock: tests advance it to expire tokens.
	clock atomic.Int64
	// users maps a user to the scopes the user may grant (besides
	// offline_access); nil allows every scope the client may ask for.
	users map[string][]string

	refreshGrants atomic.Int64 // refresh tokens redeemed

	mu        sync.Mutex
	resources map[string]string // state → resource of the authorization request
	requests  map[string]*acRequest
	codes     map[string]string // code → request id
	refreshes map[string]*acRefresh
}

type ccClient struct {
	id, secret string
	audience   string
	scopes     []string
	redirects  []string
}

// now is the authorization server's clock.
func (s *ccStorage) now() time.Time { return time.Now().Add(time.Duration(s.clock.Load())) }

var errNotSupported = errors.New("not supported by the test authorization server")

func newCCStorage(clients ...*ccClient) (*ccStorage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &ccStorage{clients: map[string]*ccClient{}, key: key, keyID: "rs-1", resources: map[string]string{},
		requests: map[string]*acRequest{}, codes: map[string]string{}, refreshes: map[string]*acRefresh{}}
	for _, c := range clients {
		s.clients[c.id] = c
	}
	return s, nil
}

// op.ClientCredentialsStorage

func (s *ccStorage) ClientCredentials(_ context.Context, clientID, clientSecret string) (op.Client, error) {
	c, ok := s.clients[clientID]
	if !ok || c.secret != clientSecret {
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client or wrong secret")
	}
	return c, nil
}

func (s *ccStorage) ClientCredentialsTokenRequest(_ context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	c, ok := s.clients[clientID]
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	for _, sc := range scopes {
		if !c.IsScopeAllowed(sc) {
			return nil, oidc.ErrInvalidScope().WithDescription("scope %s is not allowed for %s", sc, clientID)
		}
	}
	return &ccTokenRequest{subject: clientID, audience: []string{c.audience}, scopes: scopes}, nil
}

type ccTokenRequest struct {
	subject  string
	audience []string
	scopes   []string
}

func (r *ccTokenRequest) GetSubject() string    { return r.subject }
func (r *ccTokenRequest) GetAudience() []string { return r.audience }
func (r *ccTokenRequest) GetScopes() []string   { return r.scopes }

// op.AuthStorage: see as_authcode_test.go.

func (s *ccStorage) TerminateSession(context.Context, string, string) error { return errNotSupported }
func (s *ccStorage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrInvalidRequest().WithDescription("revocation is not supported")
}
func (s *ccStorage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *ccStorage) SigningKey(context.Context) (op.SigningKey, error) {
	return ccKey{id: s.keyID, key: s.key}, nil
}
func (s *ccStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}
func (s *ccStorage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{ccKey{id: s.keyID, key: s.key, public: true}}, nil
}

// ccKey is the signing key (SigningKey) or its public half (Key).
type ccKey struct {
	id     string
	key    *rsa.PrivateKey
	public bool
}

func (k ccKey) ID() string                                  { return k.id }
func (k ccKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k ccKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k ccKey) Use() string                                 { return "sig" }
func (k ccKey) Key() any {
	if k.public {
		return &k.key.PublicKey
	}
	return k.key
}

// op.OPStorage

func (s *ccStorage) GetClientByClientID(_ context.Context, clientID string) (op.Client, error) {
	if c, ok := s.clients[clientID]; ok {
		return c, nil
	}
	return nil, oidc.ErrInvalidClient()
}

func (s *ccStorage) AuthorizeClientIDSecret(_ context.Context, clientID, clientSecret string) error {
	if c, ok := s.clients[clientID]; ok && c.secret == clientSecret {
		return nil
	}
	return oidc.ErrInvalidClient()
}

func (s *ccStorage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *ccStorage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errNotSupported
}
func (s *ccStorage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errNotSupported
}

// GetPrivateClaimsFromScopes puts the granted scopes into the JWT access
// token as RFC 9068's "scope" claim.
func (s *ccStorage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	return map[string]any{"scope": strings.Join(scopes, " ")}, nil
}

func (s *ccStorage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotSupported
}
func (s *ccStorage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errNotSupported
}
func (s *ccStorage) Health(context.Context) error { return nil }

// op.Client

func (c *ccClient) GetID() string                       { return c.id }
func (c *ccClient) RedirectURIs() []string              { return c.redirects }
func (c *ccClient) PostLogoutRedirectURIs() []string    { return nil }
func (c *ccClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *ccClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *ccClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *ccClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials, oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}
func (c *ccClient) LoginURL(id string) string            { return "/login?authRequestID=" + url.QueryEscape(id) }
func (c *ccClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *ccClient) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *ccClient) DevMode() bool                        { return false }
func (c *ccClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *ccClient) ClockSkew() time.Duration             { return 0 }
func (c *ccClient) IsScopeAllowed(scope string) bool     { return slices.Contains(c.scopes, scope) }
func (c *ccClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *ccClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
