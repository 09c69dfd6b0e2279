package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Signer signs the JWTs an OAuth client sends, DPoP proofs (RFC 9449) and
// private_key_jwt client assertions (RFC 7523), with one key, on go-jose
// (the library the resource server verifies with).
type Signer struct {
	key        any // the concrete private key go-jose signs with
	alg        jose.SignatureAlgorithm
	jwk        jose.JSONWebKey // public
	thumbprint string
}

// NewSigner returns a Signer for key: an ECDSA key on P-256, P-384 or
// P-521 (ES256, ES384, ES512), an RSA key (RS256) or an Ed25519 key
// (EdDSA).
func NewSigner(key crypto.Signer) (*Signer, error) {
	var alg jose.SignatureAlgorithm
	var priv any = key
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		}
	case *rsa.PrivateKey:
		alg = jose.RS256
	case ed25519.PrivateKey:
		alg = jose.EdDSA
	case *ed25519.PrivateKey:
		alg, priv = jose.EdDSA, *k
	}
	if alg == "" {
		return nil, fmt.Errorf("oauth: unsupported signing key type %T (want an ECDSA, RSA or Ed25519 private key)", key)
	}
	s := &Signer{key: priv, alg: alg, jwk: jose.JSONWebKey{Key: key.Public()}}
	tp, err := s.jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("oauth: signing key: %w", err)
	}
	s.thumbprint = base64.RawURLEncoding.EncodeToString(tp)
	return s, nil
}

// Alg is the JWS algorithm of the Signer's JWTs.
func (s *Signer) Alg() string { return string(s.alg) }

// Thumbprint is the RFC 7638 SHA-256 thumbprint of the public key,
// base64url-encoded: the jkt a DPoP-bound token carries in cnf.
func (s *Signer) Thumbprint() string { return s.thumbprint }

// sign signs claims with the extra protected headers.
func (s *Signer) sign(claims map[string]any, opts *jose.SignerOptions) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.key}, opts)
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	jws, err := sig.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	return jws.CompactSerialize()
}

// DPoPProof signs a DPoP proof (RFC 9449 §4.2) for a request with method
// to target: typ dpop+jwt, the public key in jwk, a random jti, htm,
// htu = HTU(target) (the form the server compares), iat = now; with
// accessToken not empty, ath binds it; with nonce not empty, the
// server's nonce.
func (s *Signer) DPoPProof(method, target, accessToken, nonce string, now time.Time) (string, error) {
	htu, err := HTU(target)
	if err != nil {
		return "", fmt.Errorf("oauth: DPoP htu: %w", err)
	}
	claims := map[string]any{"jti": RandomToken(16), "htm": method, "htu": htu, "iat": now.Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
	return s.sign(claims, opts)
}

// ClientAssertion signs an RFC 7523 client authentication JWT: iss and
// sub clientID, aud audience (the authorization server's issuer), iat
// now, exp now+lifetime, a random jti; typ JWT, and kid keyID when not
// empty.
func (s *Signer) ClientAssertion(keyID, clientID, audience string, now time.Time, lifetime time.Duration) (string, error) {
	claims := map[string]any{
		"iss": clientID,
		"sub": clientID,
		"aud": audience,
		"iat": now.Unix(),
		"exp": now.Add(lifetime).Unix(),
		"jti": RandomToken(16),
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if keyID != "" {
		opts = opts.WithHeader("kid", keyID)
	}
	return s.sign(claims, opts)
}
