package oauthclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ParsePrivateKeyPEM parses a PEM private key (PKCS #8, SEC 1 EC or PKCS
// #1 RSA) for Config.PrivateKey or Config.DPoPKey.
func ParsePrivateKeyPEM(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("pmcp: no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("pmcp: unsupported private key type %T", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("pmcp: the PEM block is not a PKCS #8, EC or RSA private key")
}

// signingMethod returns the JWS algorithm for key.
func signingMethod(key crypto.Signer) (jwt.SigningMethod, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return jwt.SigningMethodES256, nil
		case elliptic.P384():
			return jwt.SigningMethodES384, nil
		case elliptic.P521():
			return jwt.SigningMethodES512, nil
		}
	case *rsa.PrivateKey:
		return jwt.SigningMethodRS256, nil
	case ed25519.PrivateKey:
		return jwt.SigningMethodEdDSA, nil
	}
	return nil, fmt.Errorf("pmcp: unsupported signing key type %T (want an ECDSA, RSA or Ed25519 private key)", key)
}

// randomToken returns n random bytes, base64url-encoded.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// clientAssertionLifetime is how long a private_key_jwt assertion is valid.
const clientAssertionLifetime = 5 * time.Minute

// clientAssertion signs an RFC 7523 client authentication JWT: iss and sub
// the client id, aud the authorization server's issuer.
func clientAssertion(key crypto.Signer, keyID, clientID, audience string, now time.Time) (string, error) {
	m, err := signingMethod(key)
	if err != nil {
		return "", err
	}
	t := jwt.NewWithClaims(m, jwt.MapClaims{
		"iss": clientID,
		"sub": clientID,
		"aud": audience,
		"iat": now.Unix(),
		"exp": now.Add(clientAssertionLifetime).Unix(),
		"jti": randomToken(16),
	})
	if keyID != "" {
		t.Header["kid"] = keyID
	}
	return t.SignedString(key)
}

// dpopSigner makes RFC 9449 proofs with one key and remembers the latest
// nonce each origin (authorization server or resource server) handed out.
type dpopSigner struct {
	key    crypto.Signer
	method jwt.SigningMethod
	jwk    map[string]string

	mu     sync.Mutex
	nonces map[string]string
}

// maxDPoPNonces bounds the per-origin nonce cache.
const maxDPoPNonces = 64

func newDPoPSigner(key crypto.Signer) (*dpopSigner, error) {
	m, err := signingMethod(key)
	if err != nil {
		return nil, err
	}
	jwk, err := publicJWK(key.Public())
	if err != nil {
		return nil, err
	}
	return &dpopSigner{key: key, method: m, jwk: jwk, nonces: map[string]string{}}, nil
}

// alg is the JWS algorithm name of the proofs.
func (d *dpopSigner) alg() string { return d.method.Alg() }

// publicJWK returns the RFC 7517 members of a public key that RFC 7638
// thumbprints use.
func publicJWK(pub crypto.PublicKey) (map[string]string, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		raw, err := k.Bytes() // uncompressed point 0x04 || X || Y
		if err != nil {
			return nil, err
		}
		n := (len(raw) - 1) / 2
		return map[string]string{"kty": "EC", "crv": k.Curve.Params().Name, "x": b64(raw[1 : 1+n]), "y": b64(raw[1+n:])}, nil
	case *rsa.PublicKey:
		e := big2bytes(k.E)
		return map[string]string{"kty": "RSA", "n": b64(k.N.Bytes()), "e": b64(e)}, nil
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(k)}, nil
	}
	return nil, fmt.Errorf("pmcp: unsupported public key type %T", pub)
}

func big2bytes(e int) []byte {
	var b []byte
	for e > 0 {
		b = append([]byte{byte(e)}, b...)
		e >>= 8
	}
	return b
}

// jwkThumbprint is the RFC 7638 SHA-256 thumbprint of a public JWK: the
// hash of its required members in lexicographic order, without spaces.
func jwkThumbprint(jwk map[string]string) string {
	var members []string
	switch jwk["kty"] {
	case "EC":
		members = []string{"crv", "kty", "x", "y"}
	case "RSA":
		members = []string{"e", "kty", "n"}
	case "OKP":
		members = []string{"crv", "kty", "x"}
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%q", m, jwk[m])
	}
	b.WriteByte('}')
	sum := sha256.Sum256([]byte(b.String()))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// htu is the request URI a proof names: no query, no fragment.
func htu(u *url.URL) string {
	v := *u
	v.RawQuery, v.Fragment, v.RawFragment, v.User = "", "", "", nil
	v.ForceQuery = false
	return v.String()
}

func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// proof signs a DPoP proof for method and target; accessToken, when not
// empty, is bound with ath. The nonce last seen from target's origin is
// included.
func (d *dpopSigner) proof(method string, target *url.URL, accessToken string, now time.Time) (string, error) {
	claims := jwt.MapClaims{
		"jti": randomToken(16),
		"htm": method,
		"htu": htu(target),
		"iat": now.Unix(),
	}
	if n := d.nonce(target); n != "" {
		claims["nonce"] = n
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	t := jwt.NewWithClaims(d.method, claims)
	t.Header["typ"] = "dpop+jwt"
	t.Header["jwk"] = d.jwk
	return t.SignedString(d.key)
}

func (d *dpopSigner) nonce(target *url.URL) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nonces[originOf(target)]
}

// maxDPoPNonceBytes caps a nonce the client remembers.
const maxDPoPNonceBytes = 1024

// setNonce records the DPoP-Nonce an origin sent; it reports whether it
// differs from the one already known.
func (d *dpopSigner) setNonce(target *url.URL, nonce string) bool {
	if nonce == "" || len(nonce) > maxDPoPNonceBytes {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	o := originOf(target)
	if d.nonces[o] == nonce {
		return false
	}
	if _, ok := d.nonces[o]; !ok && len(d.nonces) >= maxDPoPNonces {
		clear(d.nonces)
	}
	d.nonces[o] = nonce
	return true
}
