package oauthclient

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/oauth"
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

// clientAssertionLifetime is how long a private_key_jwt assertion is valid.
const clientAssertionLifetime = 5 * time.Minute

// clientAssertion signs an RFC 7523 client authentication JWT: iss and sub
// the client id, aud the authorization server's issuer (oauth.Signer).
func clientAssertion(key crypto.Signer, keyID, clientID, audience string, now time.Time) (string, error) {
	s, err := oauth.NewSigner(key)
	if err != nil {
		return "", err
	}
	return s.ClientAssertion(keyID, clientID, audience, now, clientAssertionLifetime)
}

// dpopSigner makes RFC 9449 proofs with one key (oauth.Signer: htu is
// oauth.HTU, the form the resource server compares) and remembers the
// latest nonce each origin (authorization server or resource server)
// handed out.
type dpopSigner struct {
	signer *oauth.Signer

	mu     sync.Mutex
	nonces map[string]string
}

// maxDPoPNonces bounds the per-origin nonce cache.
const maxDPoPNonces = 64

func newDPoPSigner(key crypto.Signer) (*dpopSigner, error) {
	s, err := oauth.NewSigner(key)
	if err != nil {
		return nil, err
	}
	return &dpopSigner{signer: s, nonces: map[string]string{}}, nil
}

// alg is the JWS algorithm name of the proofs.
func (d *dpopSigner) alg() string { return d.signer.Alg() }

func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// proof signs a DPoP proof for method and target; accessToken, when not
// empty, is bound with ath. The nonce last seen from target's origin is
// included.
func (d *dpopSigner) proof(method string, target *url.URL, accessToken string, now time.Time) (string, error) {
	return d.signer.DPoPProof(method, target.String(), accessToken, d.nonce(target), now)
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
