package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp"
)

const (
	testIssuer   = "https://as.example.com"
	testResource = "https://mcp.example.com/mcp"
)

// testKey is a signing key of the fake authorization server.
type testKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func (k testKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// testAS is a fake authorization server: it serves a JWKS on loopback,
// counts the fetches and signs tokens.
type testAS struct {
	t    testing.TB
	ts   *httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	keys   map[string]testKey
	served []string // kids published in the JWKS
	body   func(w http.ResponseWriter, r *http.Request) bool
}

var (
	keysOnce sync.Once
	rsaKey   *rsa.PrivateKey
	ecKey    *ecdsa.PrivateKey
	edKey    ed25519.PrivateKey
	rsaKey2  *rsa.PrivateKey
)

// sharedKeys generates the keys once per test binary (RSA is slow).
func sharedKeys(t testing.TB) {
	keysOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
		if rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
		if ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
		if _, edKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			t.Fatal(err)
		}
	})
}

func newTestAS(t testing.TB) *testAS {
	t.Helper()
	sharedKeys(t)
	as := &testAS{t: t, keys: map[string]testKey{
		"rsa1": {"rsa1", jose.RS256, rsaKey},
		"ec1":  {"ec1", jose.ES256, ecKey},
		"ed1":  {"ed1", jose.EdDSA, edKey},
		"rot1": {"rot1", jose.PS256, rsaKey2},
	}, served: []string{"rsa1", "ec1", "ed1"}}
	as.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.hits.Add(1)
		as.mu.Lock()
		body := as.body
		as.mu.Unlock()
		if body != nil && body(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(as.jwks())
	}))
	t.Cleanup(as.ts.Close)
	return as
}

func (as *testAS) jwksURL() string { return as.ts.URL + "/jwks" }

func (as *testAS) jwks() []byte {
	as.mu.Lock()
	defer as.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, kid := range as.served {
		set.Keys = append(set.Keys, as.keys[kid].public())
	}
	b, err := json.Marshal(set)
	if err != nil {
		as.t.Fatal(err)
	}
	return b
}

func (as *testAS) publish(kids ...string) {
	as.mu.Lock()
	as.served = kids
	as.mu.Unlock()
}

// claims returns valid access-token claims for testResource.
func claims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss":       testIssuer,
		"aud":       testResource,
		"sub":       "user-1",
		"client_id": "client-1",
		"scope":     "mcp:tools mcp:read",
		"iat":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
		"jti":       "tok-1",
	}
}

// sign signs c with the key kid, typ at+jwt unless hdr overrides it.
func (as *testAS) sign(kid string, c map[string]any, hdr map[jose.HeaderKey]any) string {
	as.t.Helper()
	k := as.keys[kid]
	return signWith(as.t, k.alg, k.priv, kid, c, hdr)
}

func signWith(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, c map[string]any, hdr map[jose.HeaderKey]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	for k, v := range hdr {
		opts = opts.WithHeader(k, v)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// newVerifier returns a verifier of testAS tokens for testResource.
func (as *testAS) newVerifier(t testing.TB, mod func(*JWTOptions)) *JWTVerifier {
	t.Helper()
	o := JWTOptions{JWKSURL: as.jwksURL(), Issuer: testIssuer, Audience: testResource}
	if mod != nil {
		mod(&o)
	}
	v, err := NewJWTVerifier(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// challenge is a parsed WWW-Authenticate value.
type challenge struct {
	scheme string
	params map[string]string
}

// parseChallenge parses one challenge strictly: scheme, then
// comma-separated name="quoted value" pairs, no duplicates.
func parseChallenge(t *testing.T, s string) challenge {
	t.Helper()
	c := challenge{params: map[string]string{}}
	sp := strings.IndexByte(s, ' ')
	if sp < 0 {
		c.scheme = s
		return c
	}
	c.scheme, s = s[:sp], s[sp+1:]
	for s != "" {
		eq := strings.Index(s, `="`)
		if eq <= 0 {
			t.Fatalf("challenge %q: no name=\"value\" at %q", c.scheme, s)
		}
		name := s[:eq]
		rest := s[eq+2:]
		end := strings.IndexByte(rest, '"')
		if end < 0 {
			t.Fatalf("challenge: unterminated value in %q", s)
		}
		if _, dup := c.params[name]; dup {
			t.Fatalf("challenge: duplicate %s", name)
		}
		c.params[name] = rest[:end]
		s = rest[end+1:]
		if s != "" {
			if !strings.HasPrefix(s, ", ") {
				t.Fatalf("challenge: want \", \" at %q", s)
			}
			s = s[2:]
		}
	}
	return c
}

// authErr asserts err is a *pmcp.AuthError with status and returns its
// challenges parsed.
func authErr(t *testing.T, err error, status int) []challenge {
	t.Helper()
	var ae *pmcp.AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not a *pmcp.AuthError", err)
	}
	if ae.Status != status {
		t.Fatalf("status %d, want %d (%v)", ae.Status, status, err)
	}
	var out []challenge
	for _, c := range ae.Challenges {
		out = append(out, parseChallenge(t, c))
	}
	return out
}

func newTestAuthenticator(t testing.TB, v TokenVerifier, mod func(*Options)) *Authenticator {
	t.Helper()
	o := Options{Verifier: v, Resource: testResource, Scopes: []string{"mcp:tools"}}
	if mod != nil {
		mod(&o)
	}
	a, err := NewAuthenticator(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func bearerRequest(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader("{}"))
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}
