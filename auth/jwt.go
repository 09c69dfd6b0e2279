package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp/oauth"
)

// DefaultAlgorithms are the JWS algorithms accepted when none are
// configured: asymmetric ones only. "none" and the HMAC algorithms are
// never accepted, whatever the options say.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// JWTOptions configure a JWTVerifier. JWKSURL, Issuer and Audience are
// required; every other zero value works.
type JWTOptions struct {
	// JWKSURL is the authorization server's JWKS (its jwks_uri).
	JWKSURL string
	// Issuer must equal the token's "iss" exactly.
	Issuer string
	// Audience is this server's canonical resource URI; the token's
	// "aud" must contain it (RFC 8707). Tokens for other resources are
	// refused, so the check cannot be forgotten.
	Audience string
	// Algorithms is the allow-list of JWS algorithms. Empty means
	// DefaultAlgorithms. "none" and HS* are refused at construction.
	Algorithms []string
	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means
	// DefaultLeeway; negative means none.
	Leeway time.Duration
	// RequireATJWT requires the header "typ" to be "at+jwt" (RFC 9068).
	// Without it any typ is accepted except "dpop+jwt" (a DPoP proof is
	// never an access token).
	RequireATJWT bool
	// MaxTokenBytes caps a token. Zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// HTTPClient fetches the JWKS. Nil means a client of the verifier's
	// own over http.DefaultTransport.
	HTTPClient *http.Client
	// FetchTimeout bounds one JWKS fetch. Zero means
	// DefaultJWKSFetchTimeout.
	FetchTimeout time.Duration
	// MaxJWKSBytes caps the JWKS document. Zero means
	// DefaultJWKSMaxBytes.
	MaxJWKSBytes int64
	// RefreshMinInterval rate-limits JWKS fetches (see
	// DefaultJWKSRefreshMinInterval). Zero means
	// DefaultJWKSRefreshMinInterval.
	RefreshMinInterval time.Duration
	// MaxAge is how long a fetched JWKS is used before the next fetch.
	// Zero means DefaultJWKSMaxAge.
	MaxAge time.Duration
	// VerifiedTokenCacheSize caps the tokens remembered as verified, so
	// that a token sent again skips the signature check. A remembered
	// token is keyed by its SHA-256 (the token itself is not kept), is
	// forgotten at its exp, has exp, nbf and iat checked again on every
	// use with the verifier's clock and Leeway, and is accepted only
	// while the key that signed it is still in the key set. Refused
	// tokens are never remembered. Zero means
	// DefaultVerifiedTokenCacheSize; negative disables the cache.
	VerifiedTokenCacheSize int
}

// JWTVerifier verifies JWT access tokens (RFC 9068) signed by keys of a
// remote JWKS. It checks the signature with an algorithm of the
// allow-list, "iss", "aud" (which must contain the Audience), "exp"
// (required), "nbf" and "iat" with leeway, and optionally the header typ.
// Tokens that pass are remembered (see
// JWTOptions.VerifiedTokenCacheSize), which never changes a verdict.
// It is safe for concurrent use and starts no goroutine.
type JWTVerifier struct {
	issuer   string
	audience string
	algs     []jose.SignatureAlgorithm
	leeway   time.Duration
	atJWT    bool
	maxToken int
	keys     *keySet
	cache    *verifiedCache // nil when disabled
	now      func() time.Time
}

// NewJWTVerifier checks opts and returns a JWTVerifier. The key set is
// fetched on first use.
func NewJWTVerifier(opts JWTOptions) (*JWTVerifier, error) {
	if opts.JWKSURL == "" {
		return nil, errors.New("auth: JWTOptions.JWKSURL is required")
	}
	if opts.Issuer == "" {
		return nil, errors.New("auth: JWTOptions.Issuer is required")
	}
	aud, err := oauth.Canonical(opts.Audience)
	if err != nil {
		return nil, fmt.Errorf("auth: JWTOptions.Audience is required and must be the resource URI: %w", err)
	}
	algs, err := allowList(opts.Algorithms)
	if err != nil {
		return nil, err
	}
	v := &JWTVerifier{issuer: opts.Issuer, audience: aud, algs: algs, atJWT: opts.RequireATJWT, maxToken: opts.MaxTokenBytes, now: time.Now,
		cache: newVerifiedCache(opts.VerifiedTokenCacheSize)}
	v.leeway = durationOr(opts.Leeway, DefaultLeeway)
	if v.maxToken <= 0 {
		v.maxToken = DefaultMaxTokenBytes
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	v.keys = &keySet{
		url:         opts.JWKSURL,
		client:      client,
		maxBytes:    opts.MaxJWKSBytes,
		timeout:     durationOr(opts.FetchTimeout, DefaultJWKSFetchTimeout),
		minInterval: durationOr(opts.RefreshMinInterval, DefaultJWKSRefreshMinInterval),
		maxAge:      durationOr(opts.MaxAge, DefaultJWKSMaxAge),
		now:         func() time.Time { return v.now() },
	}
	if v.keys.maxBytes <= 0 {
		v.keys.maxBytes = DefaultJWKSMaxBytes
	}
	return v, nil
}

// durationOr returns d, def when d is zero, and zero when d is negative.
func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// allowList turns algorithm names into the allow-list, refusing "none",
// the HMAC algorithms and names it does not know.
func allowList(names []string) ([]jose.SignatureAlgorithm, error) {
	if len(names) == 0 {
		names = DefaultAlgorithms
	}
	var algs []jose.SignatureAlgorithm
	for _, n := range names {
		if !contains(DefaultAlgorithms, n) {
			return nil, fmt.Errorf("auth: algorithm %q is not allowed (only asymmetric JWS algorithms are)", n)
		}
		algs = append(algs, jose.SignatureAlgorithm(n))
	}
	return algs, nil
}

// asymmetric reports whether key is a public key of a kind the allowed
// algorithms use.
func asymmetric(key any) bool {
	switch key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}

// Fetches returns how many times the key set was fetched (for metrics
// and tests).
func (v *JWTVerifier) Fetches() uint64 {
	v.keys.mu.Lock()
	defer v.keys.mu.Unlock()
	return v.keys.fetches
}

// accessClaims are the claims read besides the registered ones.
type accessClaims struct {
	Scope    any    `json:"scope"`
	Scp      any    `json:"scp"`
	ClientID string `json:"client_id"`
	Azp      string `json:"azp"`
	Cnf      *struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
}

// VerifyToken implements TokenVerifier. The Token is the caller's own.
func (v *JWTVerifier) VerifyToken(ctx context.Context, token string) (*Token, error) {
	t, shared, err := v.verifyShared(ctx, token)
	if shared {
		t = t.clone()
	}
	return t, err
}

// verifyShared is VerifyToken without the copy of a remembered token:
// when shared is true, t is the verified-token cache's own and must not be
// modified. The Authenticator uses it, and copies what it hands out.
func (v *JWTVerifier) verifyShared(ctx context.Context, token string) (t *Token, shared bool, err error) {
	if len(token) > v.maxToken {
		return nil, false, fmt.Errorf("%w: larger than %d bytes", ErrInvalidToken, v.maxToken)
	}
	var cacheKey [32]byte
	if v.cache != nil {
		cacheKey = tokenKey(token)
		if t := v.cached(ctx, cacheKey); t != nil {
			return t, true, nil
		}
	}
	t, err = v.verifyFull(ctx, token, cacheKey)
	return t, false, err
}

// verifyFull verifies token in full and remembers it under cacheKey when
// the cache is on.
func (v *JWTVerifier) verifyFull(ctx context.Context, token string, cacheKey [32]byte) (*Token, error) {
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: not a single-signature JWS", ErrInvalidToken)
	}
	h := tok.Headers[0]
	typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
	typ = strings.ToLower(strings.TrimPrefix(strings.ToLower(typ), "application/"))
	if typ == "dpop+jwt" || (v.atJWT && typ != "at+jwt") {
		return nil, fmt.Errorf("%w: header typ %q", ErrInvalidToken, typ)
	}
	_, jku := h.ExtraHeaders["jku"]
	_, x5u := h.ExtraHeaders["x5u"]
	if h.JSONWebKey != nil || jku || x5u {
		// Keys come from the configured JWKS only, never from the token.
		return nil, fmt.Errorf("%w: token names its own key", ErrInvalidToken)
	}
	keys, err := v.keys.lookup(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var (
		std   jwt.Claims
		extra accessClaims
		all   map[string]any
		pub   any
	)
	err = errUnknownKey
	for i := range keys {
		if err = tok.Claims(keys[i].Key, &std, &extra, &all); err == nil {
			pub = keys[i].Key
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrInvalidToken, err)
	}
	if std.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp claim", ErrInvalidToken)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, Time: v.now()}, v.leeway); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if !oauth.AudienceHas(std.Audience, v.audience) {
		return nil, fmt.Errorf("%w: audience %q does not include %s", ErrInvalidToken, []string(std.Audience), v.audience)
	}
	t := &Token{
		Subject:   std.Subject,
		ClientID:  extra.ClientID,
		Issuer:    std.Issuer,
		Audience:  []string(std.Audience),
		Scopes:    scopeList(extra.Scope, extra.Scp),
		ExpiresAt: std.Expiry.Time(),
		Claims:    all,
	}
	if t.ClientID == "" {
		t.ClientID = extra.Azp
	}
	if extra.Cnf != nil {
		t.JKT = extra.Cnf.JKT
	}
	if v.cache != nil {
		v.remember(cacheKey, h.KeyID, h.Algorithm, pub, &std, t)
	}
	return t, nil
}

// scopeList reads scopes from "scope" (a space-separated string, RFC
// 9068) or "scp" (a string or an array, as some servers send).
func scopeList(vals ...any) []string {
	for _, v := range vals {
		switch s := v.(type) {
		case string:
			if f := strings.Fields(s); len(f) > 0 {
				return f
			}
		case []any:
			var out []string
			for _, x := range s {
				if str, ok := x.(string); ok && str != "" {
					out = append(out, str)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return nil
}
