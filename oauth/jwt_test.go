package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// formerThumbprint was the pmcp client's RFC 7638 thumbprint, computed by
// hand from the public key's members (oauth_jwt.go publicJWK and
// jwkThumbprint); Signer.Thumbprint is go-jose's, the one the resource
// server compares with cnf.jkt.
func formerThumbprint(pub crypto.PublicKey) string {
	b64 := base64.RawURLEncoding.EncodeToString
	var members string
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		raw, _ := k.Bytes()
		n := (len(raw) - 1) / 2
		members = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, k.Curve.Params().Name, b64(raw[1:1+n]), b64(raw[1+n:]))
	case *rsa.PublicKey:
		var e []byte
		for v := k.E; v > 0; v >>= 8 {
			e = append([]byte{byte(v)}, e...)
		}
		members = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, b64(e), b64(k.N.Bytes()))
	case ed25519.PublicKey:
		members = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, b64(k))
	}
	sum := sha256.Sum256([]byte(members))
	return b64(sum[:])
}

// formerHTU was the pmcp client's htu: the request URL without query,
// fragment or user information, not canonicalised.
func formerHTU(u *url.URL) string {
	v := *u
	v.RawQuery, v.Fragment, v.RawFragment, v.User, v.ForceQuery = "", "", "", nil, false
	return v.String()
}

func testKeys(t *testing.T) map[string]crypto.Signer {
	t.Helper()
	keys := map[string]crypto.Signer{}
	for name, c := range map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = k
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keys["RS256"] = rk
	_, ek, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys["EdDSA"] = ek
	return keys
}

// TestSignerProofs: every key type signs a DPoP proof that go-jose
// verifies with the embedded key, with the claims and headers of RFC 9449
// §4.2, and the thumbprint equals the client's former hand-made one.
func TestSignerProofs(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for alg, key := range testKeys(t) {
		s, err := NewSigner(key)
		if err != nil {
			t.Fatal(err)
		}
		if s.Alg() != alg {
			t.Errorf("%s: Alg %s", alg, s.Alg())
		}
		if got, want := s.Thumbprint(), formerThumbprint(key.Public()); got != want {
			t.Errorf("%s: thumbprint %s, former %s", alg, got, want)
		}
		proof, err := s.DPoPProof("POST", "HTTPS://MCP.example.com:443/mcp?x=1#f", "tok", "n1", now)
		if err != nil {
			t.Fatal(err)
		}
		jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
		if err != nil {
			t.Fatal(err)
		}
		h := jws.Signatures[0].Protected
		jwk := h.JSONWebKey
		if jwk == nil || !jwk.IsPublic() || h.ExtraHeaders[jose.HeaderType] != "dpop+jwt" {
			t.Fatalf("%s: header %+v", alg, h)
		}
		payload, err := jws.Verify(jwk.Key)
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]any
		_ = json.Unmarshal(payload, &c)
		sum := sha256.Sum256([]byte("tok"))
		if c["htm"] != "POST" || c["htu"] != "https://mcp.example.com/mcp" || c["iat"] != float64(now.Unix()) || c["nonce"] != "n1" ||
			c["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) || c["jti"] == "" {
			t.Errorf("%s: claims %v", alg, c)
		}
		a, err := s.ClientAssertion("kid-1", "client", "https://as.example.com", now, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		jws, err = jose.ParseSignedCompact(a, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
		if err != nil {
			t.Fatal(err)
		}
		payload, err = jws.Verify(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		c = nil
		_ = json.Unmarshal(payload, &c)
		if h := jws.Signatures[0].Header; h.KeyID != "kid-1" || h.ExtraHeaders[jose.HeaderType] != "JWT" || c["iss"] != "client" || c["sub"] != "client" ||
			c["aud"] != "https://as.example.com" || c["exp"] != float64(now.Add(5*time.Minute).Unix()) {
			t.Errorf("%s: assertion %+v %v", alg, h, c)
		}
	}
	if _, err := NewSigner(fakeSigner{}); err == nil || !strings.Contains(err.Error(), "unsupported") {
		t.Errorf("a foreign key: %v", err)
	}
}

type fakeSigner struct{ crypto.Signer }

// TestHTUOneRule pins where the client's former htu differed from HTU,
// the form the server compares (RFC 9449 §4.3 with RFC 3986 §6.2.2-6.2.3
// normalisation): the client now signs HTU.
func TestHTUOneRule(t *testing.T) {
	for _, tc := range []struct{ url, former, now string }{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp?x=1#f", "https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"HTTPS://MCP.Example.com/mcp", "https://MCP.Example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com:443/mcp", "https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/", "https://mcp.example.com/", "https://mcp.example.com"},
		{"https://mcp.example.com/mcp/", "https://mcp.example.com/mcp/", "https://mcp.example.com/mcp/"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
		// Canonical decodes an encoded slash (the resource rule's
		// percent-encoding normalisation, kept as it is).
		{"https://mcp.example.com/a%2Fb", "https://mcp.example.com/a%2Fb", "https://mcp.example.com/a/b"},
	} {
		u, _ := url.Parse(tc.url)
		now, err := HTU(tc.url)
		if got := formerHTU(u); got != tc.former || err != nil || now != tc.now {
			t.Errorf("%s: former %q, HTU %q (%v); want %q, %q", tc.url, got, now, err, tc.former, tc.now)
		}
	}
}

// TestThumbprintRFC7638: the example of RFC 7638 §3.1, by go-jose (what
// Signer.Thumbprint and the server use) and by the client's former
// hand-made thumbprint.
func TestThumbprintRFC7638(t *testing.T) {
	b, _ := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(b), E: 65537}
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	const want = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
	if err != nil || base64.RawURLEncoding.EncodeToString(tp) != want || formerThumbprint(pub) != want {
		t.Fatalf("go-jose %s (%v), former %s; want %s", base64.RawURLEncoding.EncodeToString(tp), err, formerThumbprint(pub), want)
	}
}

func TestPKCE(t *testing.T) {
	v := PKCEVerifier()
	if len(v) != 43 || v == PKCEVerifier() {
		t.Fatalf("verifier %q", v)
	}
	// RFC 7636 Appendix B.
	if got := PKCES256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatal(got)
	}
}
