package auth

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauth"
)

// Default limits of the introspection verifier.
const (
	// DefaultIntrospectionCacheSize caps the cached introspection
	// results; the least recently used is dropped first.
	DefaultIntrospectionCacheSize = 1024
	// DefaultIntrospectionCacheTTL is the longest a result is cached; a
	// token's own exp shortens it.
	DefaultIntrospectionCacheTTL = time.Minute
	// DefaultIntrospectionTimeout bounds one introspection request.
	DefaultIntrospectionTimeout = 5 * time.Second
	// DefaultIntrospectionMaxBytes caps an introspection response.
	DefaultIntrospectionMaxBytes = 64 << 10
)

// IntrospectionOptions configure an IntrospectionVerifier. Endpoint and
// Audience are required; every other zero value works.
type IntrospectionOptions struct {
	// Endpoint is the authorization server's introspection endpoint
	// (RFC 7662).
	Endpoint string
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint with HTTP Basic (client_secret_basic). Empty ClientID
	// sends no credentials.
	ClientID     string
	ClientSecret pmcp.Secret
	// Audience is this server's canonical resource URI; the response's
	// "aud" must contain it.
	Audience string
	// AllowMissingAudience accepts active tokens whose response has no
	// "aud" at all (some servers leave it out). A present "aud" that
	// lacks Audience is refused either way.
	AllowMissingAudience bool
	// Issuer, when set, must equal the response's "iss".
	Issuer string
	// Leeway is the clock skew allowed on exp and nbf. Zero means
	// DefaultLeeway; negative means none.
	Leeway time.Duration
	// MaxTokenBytes caps a token. Zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// HTTPClient sends the requests. Nil means a client of the
	// verifier's own over http.DefaultTransport that follows no redirect
	// (the token is in the request body).
	HTTPClient *http.Client
	// Timeout bounds one request. Zero means DefaultIntrospectionTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps a response. Zero means
	// DefaultIntrospectionMaxBytes.
	MaxResponseBytes int64
	// CacheSize caps the cached results of active tokens. Zero means
	// DefaultIntrospectionCacheSize; negative disables the cache.
	// Inactive results are not cached.
	CacheSize int
	// CacheTTL is the longest a result is kept. Zero means
	// DefaultIntrospectionCacheTTL.
	CacheTTL time.Duration
}

// IntrospectionVerifier verifies opaque tokens with OAuth 2.0 Token
// Introspection (RFC 7662), caching active results (keyed by a hash of
// the token, never the token itself) until the earlier of CacheTTL and
// the token's exp. A response must say "active": true, carry "exp" and
// name the Audience in "aud" (see AllowMissingAudience); anything else is
// refused. It is safe for concurrent use and starts no goroutine.
type IntrospectionVerifier struct {
	opts   IntrospectionOptions
	aud    string
	leeway time.Duration
	client *http.Client
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]*list.Element
	lru   *list.List // of *introEntry, most recent first
	calls uint64
}

type introEntry struct {
	key     [32]byte
	tok     *Token
	expires time.Time
}

// NewIntrospectionVerifier checks opts and returns a verifier.
func NewIntrospectionVerifier(opts IntrospectionOptions) (*IntrospectionVerifier, error) {
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("auth: IntrospectionOptions.Endpoint must be an http(s) URL")
	}
	aud, err := oauth.Canonical(opts.Audience)
	if err != nil {
		return nil, fmt.Errorf("auth: IntrospectionOptions.Audience is required and must be the resource URI: %w", err)
	}
	v := &IntrospectionVerifier{opts: opts, aud: aud, leeway: durationOr(opts.Leeway, DefaultLeeway), client: opts.HTTPClient, now: time.Now,
		cache: map[[32]byte]*list.Element{}, lru: list.New()}
	if v.client == nil {
		// The token travels in the body, which a 307/308 would re-send
		// to wherever the redirect points: follow none.
		v.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if v.opts.MaxTokenBytes <= 0 {
		v.opts.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if v.opts.Timeout <= 0 {
		v.opts.Timeout = DefaultIntrospectionTimeout
	}
	if v.opts.MaxResponseBytes <= 0 {
		v.opts.MaxResponseBytes = DefaultIntrospectionMaxBytes
	}
	if v.opts.CacheSize == 0 {
		v.opts.CacheSize = DefaultIntrospectionCacheSize
	}
	if v.opts.CacheTTL <= 0 {
		v.opts.CacheTTL = DefaultIntrospectionCacheTTL
	}
	return v, nil
}

// Requests returns how many introspection requests were sent.
func (v *IntrospectionVerifier) Requests() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls
}

// introResponse is the part of an RFC 7662 response that is checked.
type introResponse struct {
	Active    *bool   `json:"active"`
	Scope     string  `json:"scope"`
	ClientID  string  `json:"client_id"`
	Sub       string  `json:"sub"`
	Iss       string  `json:"iss"`
	Aud       any     `json:"aud"`
	Exp       float64 `json:"exp"`
	Nbf       float64 `json:"nbf"`
	TokenType string  `json:"token_type"`
	Cnf       *struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
}

// VerifyToken implements TokenVerifier.
func (v *IntrospectionVerifier) VerifyToken(ctx context.Context, token string) (*Token, error) {
	if len(token) > v.opts.MaxTokenBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalidToken, v.opts.MaxTokenBytes)
	}
	key := tokenKey(token)
	if t := v.cached(key); t != nil {
		return t, nil
	}
	t, err := v.introspect(ctx, token)
	if err != nil {
		return nil, err
	}
	v.store(key, t)
	return t, nil
}

func (v *IntrospectionVerifier) cached(key [32]byte) *Token {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.cache[key]
	if !ok {
		return nil
	}
	ie := e.Value.(*introEntry)
	if !v.now().Before(ie.expires) {
		v.lru.Remove(e)
		delete(v.cache, key)
		return nil
	}
	v.lru.MoveToFront(e)
	return ie.tok
}

func (v *IntrospectionVerifier) store(key [32]byte, t *Token) {
	if v.opts.CacheSize < 0 {
		return
	}
	expires := v.now().Add(v.opts.CacheTTL)
	if t.ExpiresAt.Before(expires) {
		expires = t.ExpiresAt
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.cache[key]; ok {
		v.lru.Remove(e)
		delete(v.cache, key)
	}
	for v.lru.Len() >= v.opts.CacheSize {
		e := v.lru.Back()
		v.lru.Remove(e)
		delete(v.cache, e.Value.(*introEntry).key)
	}
	v.cache[key] = v.lru.PushFront(&introEntry{key: key, tok: t, expires: expires})
}

// CacheLen returns the number of cached results.
func (v *IntrospectionVerifier) CacheLen() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lru.Len()
}

func (v *IntrospectionVerifier) introspect(ctx context.Context, token string) (*Token, error) {
	ctx, cancel := context.WithTimeout(ctx, v.opts.Timeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.opts.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: introspection: %w", ErrVerifierUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if v.opts.ClientID != "" {
		// RFC 6749 §2.3.1: both parts are form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(v.opts.ClientID), url.QueryEscape(v.opts.ClientSecret.Reveal()))
	}
	v.mu.Lock()
	v.calls++
	v.mu.Unlock()
	resp, err := v.client.Do(req)
	if err != nil {
		// The url.Error carries the endpoint, not the token (it is in the body).
		return nil, fmt.Errorf("%w: introspection: %w", ErrVerifierUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, v.opts.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: introspection: %w", ErrVerifierUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: introspection: status %d", ErrVerifierUnavailable, resp.StatusCode)
	}
	if int64(len(body)) > v.opts.MaxResponseBytes {
		return nil, fmt.Errorf("%w: introspection response larger than %d bytes", ErrVerifierUnavailable, v.opts.MaxResponseBytes)
	}
	var r introResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Active == nil {
		return nil, fmt.Errorf("%w: introspection response is not RFC 7662 JSON", ErrVerifierUnavailable)
	}
	if !*r.Active {
		return nil, fmt.Errorf("%w: inactive", ErrInvalidToken)
	}
	var claims map[string]any
	_ = json.Unmarshal(body, &claims) // decoded above
	now := v.now()
	if r.Exp == 0 {
		return nil, fmt.Errorf("%w: introspection response has no exp", ErrInvalidToken)
	}
	exp := time.Unix(int64(r.Exp), 0)
	if now.Add(-v.leeway).After(exp) {
		return nil, fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	if r.Nbf != 0 && now.Add(v.leeway).Before(time.Unix(int64(r.Nbf), 0)) {
		return nil, fmt.Errorf("%w: not yet valid", ErrInvalidToken)
	}
	if v.opts.Issuer != "" && r.Iss != v.opts.Issuer {
		return nil, fmt.Errorf("%w: issuer %q", ErrInvalidToken, r.Iss)
	}
	aud := audienceList(r.Aud)
	switch {
	case len(aud) == 0 && !v.opts.AllowMissingAudience:
		return nil, fmt.Errorf("%w: introspection response has no aud", ErrInvalidToken)
	case len(aud) > 0 && !oauth.AudienceHas(aud, v.aud):
		return nil, fmt.Errorf("%w: audience %q does not include %s", ErrInvalidToken, aud, v.aud)
	}
	if tt := strings.ToLower(r.TokenType); tt != "" && tt != "bearer" && tt != "dpop" && tt != "access_token" {
		return nil, fmt.Errorf("%w: token_type %q", ErrInvalidToken, r.TokenType)
	}
	t := &Token{Subject: r.Sub, ClientID: r.ClientID, Issuer: r.Iss, Audience: aud, Scopes: strings.Fields(r.Scope), ExpiresAt: exp, Claims: claims}
	if r.Cnf != nil {
		t.JKT = r.Cnf.JKT
	}
	return t, nil
}

func audienceList(v any) []string {
	switch a := v.(type) {
	case string:
		if a != "" {
			return []string{a}
		}
	case []any:
		var out []string
		for _, x := range a {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
