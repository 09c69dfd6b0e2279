package auth

import (
	"container/list"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func thumbprint(t *testing.T, pub any) string {
	t.Helper()
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

func athOf(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// proof signs a DPoP proof with key, embedding its public JWK.
func proof(t *testing.T, key crypto.Signer, alg jose.SignatureAlgorithm, typ string, c map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(jose.ContentType(typ))
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type dpopFixture struct {
	a     *Authenticator
	key   *ecdsa.PrivateKey
	other *ecdsa.PrivateKey
	bound string // token bound to key
	jti   int
}

func newDPoPFixture(t *testing.T, mode DPoPMode) *dpopFixture {
	t.Helper()
	f := &dpopFixture{bound: "bound-token"}
	var err error
	if f.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if f.other, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	jkt := thumbprint(t, f.key.Public())
	otherJKT := thumbprint(t, f.other.Public())
	v := TokenVerifierFunc(func(_ context.Context, tok string) (*Token, error) {
		base := Token{Subject: "user-1", ClientID: "c", Scopes: []string{"mcp:tools"}, ExpiresAt: time.Now().Add(time.Hour)}
		switch tok {
		case f.bound:
			base.JKT = jkt
		case "bound-to-other":
			base.JKT = otherJKT
		case "plain-token":
		default:
			return nil, ErrInvalidToken
		}
		return &base, nil
	})
	f.a = newTestAuthenticator(t, v, func(o *Options) { o.DPoP = mode })
	return f
}

// claims returns valid proof claims for a POST to testResource with the
// bound token and a fresh jti.
func (f *dpopFixture) claims() map[string]any {
	f.jti++
	return map[string]any{
		"jti": fmt.Sprintf("proof-%d", f.jti),
		"htm": http.MethodPost,
		"htu": testResource,
		"iat": time.Now().Unix(),
		"ath": athOf(f.bound),
	}
}

func dpopRequest(tok string, proofs ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader("{}"))
	r.Header.Set("Authorization", "DPoP "+tok)
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	return r
}

func TestDPoPValidProofAccepted(t *testing.T) {
	f := newDPoPFixture(t, DPoPAllowed)
	c := f.claims()
	c["htu"] = "HTTPS://MCP.example.com:443/mcp?ignored=1" // normalised
	info, actx, err := f.a.Authenticate(dpopRequest(f.bound, proof(t, f.key, jose.ES256, "dpop+jwt", c)))
	if err != nil {
		t.Fatal(err)
	}
	if actx.Subject != "user-1" || info.Extra["scheme"] != SchemeDPoP || info.Extra["jkt"] == "" || info.Token.Reveal() != f.bound {
		t.Fatalf("info %+v ctx %+v", info, actx)
	}
}

func TestDPoPRejects(t *testing.T) {
	f := newDPoPFixture(t, DPoPAllowed)
	mod := func(k string, v any) string {
		c := f.claims()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return proof(t, f.key, jose.ES256, "dpop+jwt", c)
	}
	replayed := mod("jti", "replay-me")
	if _, _, err := f.a.Authenticate(dpopRequest(f.bound, replayed)); err != nil {
		t.Fatalf("first use of the proof: %v", err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	none := b64([]byte(`{"alg":"none","typ":"dpop+jwt"}`)) + "." + b64(mustJSON(t, f.claims())) + "."
	otherAth := f.claims()
	otherAth["ath"] = athOf("bound-to-other")

	cases := []struct {
		name string
		req  *http.Request
	}{
		{"replayed jti", dpopRequest(f.bound, replayed)},
		{"wrong htm", dpopRequest(f.bound, mod("htm", "GET"))},
		{"wrong htu", dpopRequest(f.bound, mod("htu", "https://mcp.example.com/other"))},
		{"htu of another host", dpopRequest(f.bound, mod("htu", "https://evil.example.com/mcp"))},
		{"stale iat", dpopRequest(f.bound, mod("iat", time.Now().Add(-10*time.Minute).Unix()))},
		{"future iat", dpopRequest(f.bound, mod("iat", time.Now().Add(10*time.Minute).Unix()))},
		{"no iat", dpopRequest(f.bound, mod("iat", nil))},
		{"no jti", dpopRequest(f.bound, mod("jti", nil))},
		{"long jti", dpopRequest(f.bound, mod("jti", strings.Repeat("j", DefaultDPoPMaxJTIBytes+1)))},
		{"wrong ath", dpopRequest(f.bound, mod("ath", athOf("another-token")))},
		{"no ath", dpopRequest(f.bound, mod("ath", nil))},
		{"jkt mismatch", dpopRequest("bound-to-other", proof(t, f.key, jose.ES256, "dpop+jwt", otherAth))},
		{"unbound token", dpopRequest("plain-token", mod("ath", athOf("plain-token")))},
		{"typ JWT", dpopRequest(f.bound, proof(t, f.key, jose.ES256, "JWT", f.claims()))},
		{"alg none", dpopRequest(f.bound, none)},
		{"no proof", dpopRequest(f.bound)},
		{"two proofs", dpopRequest(f.bound, mod("x", 1), mod("x", 2))},
		{"garbage proof", dpopRequest(f.bound, "a.b.c")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.a.Authenticate(tc.req)
			if !errors.Is(err, ErrInvalidDPoPProof) {
				t.Fatalf("err %v, want ErrInvalidDPoPProof", err)
			}
			chs := authErr(t, err, http.StatusUnauthorized)
			if len(chs) != 2 || chs[0].scheme != "Bearer" || chs[1].scheme != "DPoP" {
				t.Fatalf("challenges %+v", chs)
			}
			d := chs[1].params
			if d["error"] != ErrorInvalidDPoPProof || d["algs"] == "" || d["resource_metadata"] == "" {
				t.Fatalf("DPoP challenge %+v", d)
			}
			if _, ok := chs[0].params["error"]; ok {
				t.Fatalf("Bearer challenge carries an error: %+v", chs[0])
			}
		})
	}
}

// A DPoP-bound token is never accepted as a bearer token, DPoP off or on;
// DPoPRequired refuses Bearer altogether.
func TestDPoPBoundTokenAsBearer(t *testing.T) {
	for _, mode := range []DPoPMode{DPoPDisabled, DPoPAllowed} {
		f := newDPoPFixture(t, mode)
		_, _, err := f.a.Authenticate(bearerRequest(f.bound))
		chs := authErr(t, err, http.StatusUnauthorized)
		if chs[0].scheme != "Bearer" || chs[0].params["error"] != ErrorInvalidToken {
			t.Fatalf("mode %d: %+v", mode, chs)
		}
		if _, _, err := f.a.Authenticate(bearerRequest("plain-token")); err != nil {
			t.Fatalf("mode %d: plain bearer token: %v", mode, err)
		}
	}
	f := newDPoPFixture(t, DPoPRequired)
	_, _, err := f.a.Authenticate(bearerRequest("plain-token"))
	chs := authErr(t, err, http.StatusUnauthorized)
	if len(chs) != 1 || chs[0].scheme != "DPoP" || chs[0].params["error"] != ErrorInvalidToken {
		t.Fatalf("DPoPRequired: %+v", chs)
	}
	// Without DPoP, the DPoP scheme is not understood: 401 with no error.
	f = newDPoPFixture(t, DPoPDisabled)
	_, _, err = f.a.Authenticate(dpopRequest(f.bound, proof(t, f.key, jose.ES256, "dpop+jwt", f.claims())))
	chs = authErr(t, err, http.StatusUnauthorized)
	if len(chs) != 1 || chs[0].scheme != "Bearer" || chs[0].params["error"] != "" {
		t.Fatalf("DPoPDisabled with DPoP scheme: %+v", chs)
	}
}

func TestDPoPReplayCacheBounded(t *testing.T) {
	c := &replayCache{max: 4, seen: map[[32]byte]*list.Element{}, order: list.New()}
	now := time.Now()
	for i := range 10 {
		if !c.add(sha256.Sum256([]byte{byte(i)}), now.Add(time.Minute), now) {
			t.Fatalf("fresh key %d refused", i)
		}
	}
	if c.len() != 4 {
		t.Fatalf("cache holds %d, want 4", c.len())
	}
	if c.add(sha256.Sum256([]byte{9}), now.Add(time.Minute), now) {
		t.Fatal("replay of a remembered key accepted")
	}
	// Expired entries are dropped and may be seen again.
	later := now.Add(2 * time.Minute)
	if !c.add(sha256.Sum256([]byte{9}), later.Add(time.Minute), later) || c.len() != 1 {
		t.Fatalf("after expiry: len %d", c.len())
	}
}

// With DPoPRequired only the DPoP challenge is sent, so a malformed
// header's invalid_request must be on it.
func TestDPoPRequiredMalformedHeader(t *testing.T) {
	f := newDPoPFixture(t, DPoPRequired)
	r := dpopRequest(f.bound)
	r.Header.Set("Authorization", "DPoP a b")
	_, _, err := f.a.Authenticate(r)
	chs := authErr(t, err, http.StatusBadRequest)
	if len(chs) != 1 || chs[0].scheme != "DPoP" || chs[0].params["error"] != ErrorInvalidRequest {
		t.Fatalf("challenges %+v", chs)
	}
}
