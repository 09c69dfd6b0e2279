package interop

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// ccStorage is the smallest op.Storage a zitadel/oidc OpenID provider
// needs to issue JWT access tokens with the client credentials grant
// (op.ClientCredentialsStorage). Each client has a secret, the audience
// its tokens are minted for (the resource), and the scopes it may ask
// for; a token's subject is the client id. Every other flow is refused.
type ccStorage struct {
	clients map[string]*ccClient
	key     *rsa.PrivateKey
	keyID   string
	ids     atomic.Uint64
}

type ccClient struct {
	id, secret string
	audience   string
	scopes     []string
}

var errNotSupported = errors.New("not supported by the test authorization server")

func newCCStorage(clients ...*ccClient) (*ccStorage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &ccStorage{clients: map[string]*ccClient{}, key: key, keyID: "rs-1"}
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

// op.AuthStorage

func (s *ccStorage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, errNotSupported
}
func (s *ccStorage) AuthRequestByID(context.Context, string) (op.AuthRequest, error) {
	return nil, errNotSupported
}
func (s *ccStorage) AuthRequestByCode(context.Context, string) (op.AuthRequest, error) {
	return nil, errNotSupported
}
func (s *ccStorage) SaveAuthCode(context.Context, string, string) error { return errNotSupported }
func (s *ccStorage) DeleteAuthRequest(context.Context, string) error    { return errNotSupported }

func (s *ccStorage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return "at-" + strconv.FormatUint(s.ids.Add(1), 10), time.Now().Add(5 * time.Minute), nil
}

func (s *ccStorage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNotSupported
}
func (s *ccStorage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errNotSupported
}
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
func (c *ccClient) RedirectURIs() []string              { return nil }
func (c *ccClient) PostLogoutRedirectURIs() []string    { return nil }
func (c *ccClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *ccClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *ccClient) ResponseTypes() []oidc.ResponseType  { return nil }
func (c *ccClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (c *ccClient) LoginURL(string) string               { return "" }
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
