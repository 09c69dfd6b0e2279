package auth

import (
	"container/list"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"maps"
	"slices"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp/internal/tokenhash"
)

// DefaultVerifiedTokenCacheSize caps the JWTs a JWTVerifier remembers as
// verified (see JWTOptions.VerifiedTokenCacheSize). Each entry holds the
// token's decoded claims, so the cache holds at most this many claim
// sets; tokens only the authorization server can mint fill it.
const DefaultVerifiedTokenCacheSize = 4096

// verifiedCache remembers JWTs whose signature, issuer, audience and
// header checked out, so that a token sent again skips the signature
// verification. It is keyed by the SHA-256 of the whole token (header,
// payload and signature), never the token itself, and bounded by an LRU
// list. Only verified tokens enter it. Entries are immutable once stored:
// VerifyToken hands out copies; the Authenticator reads the entry's Token
// in place and copies only what it hands out.
//
// One mutex guards it: a hit holds it for a map lookup and a move to the
// front of the list, far shorter than the rest of a request, and the
// profiles of the bench server show no contention on it.
type verifiedCache struct {
	size int

	mu  sync.Mutex
	m   map[[32]byte]*list.Element
	lru *list.List // of *verifiedEntry, most recently used first
}

// verifiedEntry is what a hit needs to reach the same verdict as a full
// verification: the registered claims (to re-check exp, nbf and iat with
// the verifier's clock), and the key that verified the signature (which
// must still be in the key set).
type verifiedEntry struct {
	key [32]byte
	kid string
	alg string
	pub any        // public key that verified the signature
	std jwt.Claims // registered claims, validated again on every hit
	tok *Token     // private copy; never handed out
}

func newVerifiedCache(size int) *verifiedCache {
	switch {
	case size < 0:
		return nil
	case size == 0:
		size = DefaultVerifiedTokenCacheSize
	}
	return &verifiedCache{size: size, m: map[[32]byte]*list.Element{}, lru: list.New()}
}

// tokenKey is the cache key of token: its SHA-256, taken in place.
func tokenKey(token string) [32]byte { return tokenhash.SHA256(token) }

// get returns the entry for key, marking it recently used.
func (c *verifiedCache) get(key [32]byte) *verifiedEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*verifiedEntry)
}

// drop removes ve if it is still the entry of its key.
func (c *verifiedCache) drop(ve *verifiedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[ve.key]; ok && e.Value.(*verifiedEntry) == ve {
		c.lru.Remove(e)
		delete(c.m, ve.key)
	}
}

// put stores ve, evicting the least recently used entries beyond size.
func (c *verifiedCache) put(ve *verifiedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[ve.key]; ok {
		c.lru.Remove(e)
		delete(c.m, ve.key)
	}
	for c.lru.Len() >= c.size {
		e := c.lru.Back()
		c.lru.Remove(e)
		delete(c.m, e.Value.(*verifiedEntry).key)
	}
	c.m[ve.key] = c.lru.PushFront(ve)
}

func (c *verifiedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// CacheLen returns the number of tokens remembered as verified.
func (v *JWTVerifier) CacheLen() int {
	if v.cache == nil {
		return 0
	}
	return v.cache.len()
}

// cached returns the Token of a remembered token when a full
// verification would accept it now: not expired (nor not yet valid) by
// the verifier's clock and leeway, and its signing key still in the key
// set (fetched again when old, as for any token). Otherwise it forgets
// the token and returns nil, and the caller verifies it in full. The
// Token is the cache's own: the caller must not modify it.
func (v *JWTVerifier) cached(ctx context.Context, key [32]byte) *Token {
	ve := v.cache.get(key)
	if ve == nil {
		return nil
	}
	now := v.now()
	if !now.Before(ve.tok.ExpiresAt) ||
		ve.std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, Time: now}, v.leeway) != nil ||
		!v.keys.holds(ctx, ve.kid, ve.alg, ve.pub, now) {
		v.cache.drop(ve)
		return nil
	}
	return ve.tok
}

// remember stores a verified token until its exp (never beyond).
func (v *JWTVerifier) remember(key [32]byte, kid, alg string, pub any, std *jwt.Claims, t *Token) {
	if !v.now().Before(t.ExpiresAt) {
		return
	}
	v.cache.put(&verifiedEntry{key: key, kid: kid, alg: alg, pub: pub, std: *std, tok: t.clone()})
}

// hasKey reports whether keys hold the public key pub (same key
// material, so a kid whose key was replaced does not match).
func hasKey(keys []jose.JSONWebKey, pub any) bool {
	p, ok := pub.(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return false
	}
	for i := range keys {
		// Until the key set is refetched the key is the very same
		// object; comparing the material (which for ECDSA allocates)
		// is needed only after a refetch.
		if samePointer(keys[i].Key, pub) || p.Equal(keys[i].Key) {
			return true
		}
	}
	return false
}

// samePointer reports whether a and b are the same RSA, ECDSA or Ed25519
// public key object (for Ed25519, the same bytes in memory).
func samePointer(a, b any) bool {
	switch a := a.(type) {
	case *rsa.PublicKey:
		b, ok := b.(*rsa.PublicKey)
		return ok && a == b
	case *ecdsa.PublicKey:
		b, ok := b.(*ecdsa.PublicKey)
		return ok && a == b
	case ed25519.PublicKey:
		b, ok := b.(ed25519.PublicKey)
		return ok && len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
	}
	return false
}

// clone returns a deep copy of t, so that neither a caller nor the cache
// sees the other's changes.
func (t *Token) clone() *Token {
	c := *t
	c.Audience = slices.Clone(t.Audience)
	c.Scopes = slices.Clone(t.Scopes)
	if t.Claims != nil {
		c.Claims = copyJSON(t.Claims).(map[string]any)
	}
	return &c
}

// copyJSON deep-copies a decoded JSON value.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		// maps.Clone copies a map's storage in one go (far cheaper than
		// inserting each entry); then only the nested values are copied.
		m := maps.Clone(x)
		for k, e := range m {
			switch e.(type) {
			case map[string]any, []any:
				m[k] = copyJSON(e)
			}
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = copyJSON(e)
		}
		return s
	}
	return v
}
