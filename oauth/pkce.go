package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// PKCEVerifier returns a new PKCE code verifier (RFC 7636 §4.1): 32
// random bytes, base64url-encoded (43 characters).
func PKCEVerifier() string { return RandomToken(32) }

// PKCES256 returns the S256 code challenge of verifier (RFC 7636 §4.2):
// base64url(SHA-256(verifier)).
func PKCES256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// RandomToken returns n random bytes, base64url-encoded without padding
// (state, jti and PKCE values).
func RandomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
