package auth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestJWTVerifierAcceptsEachKeyType(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	for _, kid := range []string{"rsa1", "ec1", "ed1"} {
		t.Run(kid, func(t *testing.T) {
			tok, err := v.VerifyToken(context.Background(), as.sign(kid, claims(), nil))
			if err != nil {
				t.Fatal(err)
			}
			if tok.Subject != "user-1" || tok.ClientID != "client-1" || tok.Issuer != testIssuer ||
				strings.Join(tok.Scopes, " ") != "mcp:tools mcp:read" || tok.ExpiresAt.IsZero() || tok.Claims["jti"] != "tok-1" {
				t.Fatalf("token %+v", tok)
			}
		})
	}
	if n := as.hits.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times for three known keys, want 1", n)
	}
}

func TestJWTVerifierAudienceForms(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	for _, aud := range []any{"HTTPS://MCP.example.com:443/mcp", []string{"https://other.example.com", testResource}} {
		c := claims()
		c["aud"] = aud
		if _, err := v.VerifyToken(context.Background(), as.sign("ec1", c, nil)); err != nil {
			t.Fatalf("aud %v: %v", aud, err)
		}
	}
	// scp as an array, azp as the client.
	c := claims()
	delete(c, "scope")
	delete(c, "client_id")
	c["scp"] = []string{"a", "b"}
	c["azp"] = "client-2"
	tok, err := v.VerifyToken(context.Background(), as.sign("ec1", c, nil))
	if err != nil || strings.Join(tok.Scopes, ",") != "a,b" || tok.ClientID != "client-2" {
		t.Fatalf("scp/azp: %+v %v", tok, err)
	}
}

// A token minted for another spelling of a resource is for another
// resource: "<audience>/" is not "<audience>" (issue 18, item 18), whichever
// side has the slash, in JWTs and in introspection responses. Scheme, host
// and default port are not part of the spelling that matters.
func TestAudienceTrailingSlashIsAnotherResource(t *testing.T) {
	as := newTestAS(t)
	f := newFakeIntrospection(t)
	for _, tc := range []struct {
		server, aud string
		ok          bool
	}{
		{testResource, testResource + "/", false},
		{testResource + "/", testResource, false},
		{testResource + "/", testResource + "/", true},
		{testResource, "HTTPS://MCP.EXAMPLE.COM:443/mcp", true},
		{"https://mcp.example.com", "https://mcp.example.com/", true}, // the bare origin's path "" is "/"
		{"https://mcp.example.com/", "https://mcp.example.com", true},
	} {
		v := as.newVerifier(t, func(o *JWTOptions) { o.Audience = tc.server })
		c := claims()
		c["aud"] = tc.aud
		_, err := v.VerifyToken(context.Background(), as.sign("ec1", c, nil))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidToken)) {
			t.Errorf("JWT: server %q, aud %q: err %v, want ok=%v", tc.server, tc.aud, err, tc.ok)
		}
		tok := fmt.Sprintf("tok-%s-%s", tc.server, tc.aud)
		r := activeResp(time.Now().Add(time.Hour))
		r["aud"] = tc.aud
		f.set(tok, r)
		iv := f.verifier(t, func(o *IntrospectionOptions) { o.Audience = tc.server })
		_, err = iv.VerifyToken(context.Background(), tok)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidToken)) {
			t.Errorf("introspection: server %q, aud %q: err %v, want ok=%v", tc.server, tc.aud, err, tc.ok)
		}
	}
}

// Every way a token can be wrong gets ErrInvalidToken.
func TestJWTVerifierRejects(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	strictTyp := as.newVerifier(t, func(o *JWTOptions) { o.RequireATJWT = true })
	noLeeway := as.newVerifier(t, func(o *JWTOptions) { o.Leeway = -1 })
	with := func(k string, val any) map[string]any {
		c := claims()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	now := time.Now()

	pubDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	jwksJSON := as.jwks()

	b64 := base64.RawURLEncoding.EncodeToString
	payload, _ := json.Marshal(claims())
	algNone := b64([]byte(`{"alg":"none","typ":"at+jwt","kid":"rsa1"}`)) + "." + b64(payload) + "."

	good := as.sign("rsa1", claims(), nil)
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + b64(mustJSON(t, with("sub", "admin"))) + "." + parts[2]

	ecPub := as.keys["ec1"].public()
	cases := []struct {
		name  string
		v     *JWTVerifier
		token string
	}{
		{"wrong issuer", v, as.sign("rsa1", with("iss", "https://evil.example.com"), nil)},
		{"wrong audience", v, as.sign("rsa1", with("aud", "https://other.example.com/mcp"), nil)},
		{"audience prefix", v, as.sign("rsa1", with("aud", "https://mcp.example.com/mcp/extra"), nil)},
		{"no audience", v, as.sign("rsa1", with("aud", nil), nil)},
		{"expired", v, as.sign("rsa1", with("exp", now.Add(-2*time.Minute).Unix()), nil)},
		{"expired within default leeway, no leeway", noLeeway, as.sign("rsa1", with("exp", now.Add(-30*time.Second).Unix()), nil)},
		{"no exp", v, as.sign("rsa1", with("exp", nil), nil)},
		{"not yet valid", v, as.sign("rsa1", with("nbf", now.Add(5*time.Minute).Unix()), nil)},
		{"issued in the future", v, as.sign("rsa1", with("iat", now.Add(5*time.Minute).Unix()), nil)},
		{"alg none", v, algNone},
		{"HS256 signed with the RSA public key PEM", v, signWith(t, jose.HS256, pubPEM, "rsa1", claims(), nil)},
		{"HS256 signed with the JWKS bytes", v, signWith(t, jose.HS256, jwksJSON, "rsa1", claims(), nil)},
		{"tampered payload", v, tampered},
		{"signed by an unpublished key", v, signWith(t, jose.RS256, rsaKey2, "rsa1", claims(), nil)},
		{"typ dpop+jwt", v, as.sign("rsa1", claims(), map[jose.HeaderKey]any{"typ": "dpop+jwt"})},
		{"typ JWT when at+jwt required", strictTyp, as.sign("rsa1", claims(), map[jose.HeaderKey]any{"typ": "JWT"})},
		{"embedded jwk header", v, as.sign("ec1", claims(), map[jose.HeaderKey]any{"jwk": ecPub})},
		{"jku header", v, as.sign("ec1", claims(), map[jose.HeaderKey]any{"jku": "https://evil.example.com/jwks"})},
		{"oversize", v, as.sign("rsa1", with("pad", strings.Repeat("x", DefaultMaxTokenBytes)), nil)},
		{"garbage", v, "not.a.jwt"},
		{"empty", v, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tc.v.VerifyToken(context.Background(), tc.token)
			if err == nil {
				t.Fatalf("accepted: %+v", tok)
			}
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("error %v does not wrap ErrInvalidToken", err)
			}
		})
	}
	// The same expired-by-30s token passes with the default leeway.
	if _, err := v.VerifyToken(context.Background(), as.sign("rsa1", with("exp", now.Add(-30*time.Second).Unix()), nil)); err != nil {
		t.Fatalf("default leeway: %v", err)
	}
	if _, err := strictTyp.VerifyToken(context.Background(), good); err != nil {
		t.Fatalf("at+jwt with RequireATJWT: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewJWTVerifierRequiresAudienceAndSafeAlgs(t *testing.T) {
	base := JWTOptions{JWKSURL: "https://as.example.com/jwks", Issuer: testIssuer, Audience: testResource}
	bad := []func(*JWTOptions){
		func(o *JWTOptions) { o.Audience = "" },
		func(o *JWTOptions) { o.Audience = "mcp.example.com" },
		func(o *JWTOptions) { o.Issuer = "" },
		func(o *JWTOptions) { o.JWKSURL = "" },
		func(o *JWTOptions) { o.Algorithms = []string{"none"} },
		func(o *JWTOptions) { o.Algorithms = []string{"RS256", "HS256"} },
	}
	for i, mod := range bad {
		o := base
		mod(&o)
		if _, err := NewJWTVerifier(o); err == nil {
			t.Errorf("case %d: accepted %+v", i, o)
		}
	}
	if _, err := NewJWTVerifier(base); err != nil {
		t.Fatal(err)
	}
}

// An unknown kid refetches the JWKS once, then 401s; a second unknown kid
// within RefreshMinInterval does not fetch again; once the interval has
// passed, a rotated-in key is found.
func TestJWKSUnknownKidRefreshOnceThenRateLimited(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, func(o *JWTOptions) { o.RefreshMinInterval = time.Minute })
	clock := time.Now()
	v.now = func() time.Time { return clock }
	ctx := context.Background()
	if _, err := v.VerifyToken(ctx, as.sign("rsa1", claims(), nil)); err != nil {
		t.Fatal(err)
	}
	rotated := as.sign("rot1", claims(), nil)
	if _, err := v.VerifyToken(ctx, rotated); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("unknown kid: %v", err)
	}
	if n := as.hits.Load(); n != 2 {
		t.Fatalf("JWKS hits after one unknown kid: %d, want 2 (initial + one refresh)", n)
	}
	for range 20 {
		if _, err := v.VerifyToken(ctx, rotated); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unknown kid again: %v", err)
		}
	}
	if n := as.hits.Load(); n != 2 {
		t.Fatalf("JWKS hits after 20 more unknown kids: %d, want still 2", n)
	}
	// The AS rotates the key in; after the interval one refresh finds it.
	as.publish("rsa1", "rot1")
	clock = clock.Add(time.Minute + time.Second)
	if _, err := v.VerifyToken(ctx, rotated); err != nil {
		t.Fatalf("rotated key after the interval: %v", err)
	}
	if n, f := as.hits.Load(), v.Fetches(); n != 3 || f != 3 {
		t.Fatalf("JWKS hits %d, fetches %d, want 3", n, f)
	}
}

// A JWKS that does not answer costs one bounded wait, then fails fast
// (no new fetch within the interval); requests are answered 401 and
// nothing hangs.
func TestJWKSSlowEndpointIsBounded(t *testing.T) {
	as := newTestAS(t)
	release := make(chan struct{})
	as.body = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}
	t.Cleanup(func() { close(release) }) // runs before as.ts.Close
	v := as.newVerifier(t, func(o *JWTOptions) { o.FetchTimeout = 100 * time.Millisecond })
	a := newTestAuthenticator(t, v, nil)
	start := time.Now()
	_, _, err := a.Authenticate(bearerRequest(as.sign("rsa1", claims(), nil)))
	if !errors.Is(err, ErrVerifierUnavailable) {
		t.Fatalf("err %v, want ErrVerifierUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("verification took %v with a 100ms fetch timeout", d)
	}
	chs := authErr(t, err, http.StatusUnauthorized)
	if chs[0].params["error"] != ErrorInvalidToken {
		t.Fatalf("challenge %+v", chs[0])
	}
	// Fails fast now, without hitting the endpoint again.
	hits := as.hits.Load()
	start = time.Now()
	if _, err := v.VerifyToken(context.Background(), as.sign("ec1", claims(), nil)); !errors.Is(err, ErrVerifierUnavailable) {
		t.Fatalf("second: %v", err)
	}
	if d := time.Since(start); d > time.Second || as.hits.Load() != hits {
		t.Fatalf("second verification took %v and fetched %d times", d, as.hits.Load()-hits)
	}
}

// Garbage, oversize, keyless and failing JWKS answers are errors, never
// keys; the verifier recovers when the endpoint does.
func TestJWKSGarbage(t *testing.T) {
	huge := `{"keys":[` + strings.Repeat(`{"kty":"EC"},`, 100000) + `{}]}`
	cases := map[string]func(w http.ResponseWriter){
		"not json": func(w http.ResponseWriter) { _, _ = w.Write([]byte("<html>hello</html>")) },
		"oversize": func(w http.ResponseWriter) { _, _ = w.Write([]byte(huge)) },
		"symmetric key": func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"keys":[{"kty":"oct","kid":"rsa1","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}]}`))
		},
		"no keys":       func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"keys":[]}`)) },
		"keys not list": func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"keys":"x"}`)) },
		"status 500":    func(w http.ResponseWriter) { w.WriteHeader(500) },
	}
	for name, serve := range cases {
		t.Run(name, func(t *testing.T) {
			as := newTestAS(t)
			var fixed atomic.Bool
			as.body = func(w http.ResponseWriter, r *http.Request) bool {
				if fixed.Load() {
					return false
				}
				serve(w)
				return true
			}
			v := as.newVerifier(t, func(o *JWTOptions) { o.MaxJWKSBytes = 64 << 10 })
			clock := time.Now()
			v.now = func() time.Time { return clock }
			a := newTestAuthenticator(t, v, nil)
			tok := as.sign("rsa1", claims(), nil)
			_, _, err := a.Authenticate(bearerRequest(tok))
			if !errors.Is(err, ErrVerifierUnavailable) {
				t.Fatalf("err %v", err)
			}
			authErr(t, err, http.StatusUnauthorized)
			if name == "oversize" && !strings.Contains(err.Error(), "larger than") {
				t.Fatalf("oversize JWKS error %v", err)
			}
			fixed.Store(true)
			clock = clock.Add(DefaultJWKSRefreshMinInterval)
			if _, _, err := a.Authenticate(bearerRequest(tok)); err != nil {
				t.Fatalf("after recovery: %v", err)
			}
		})
	}
}

// A burst of concurrent requests, first with a cold cache and then with
// unknown key ids, costs one fetch each: the first and one refresh.
func TestJWKSConcurrentFetchesCoalesce(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	good, unknown := as.sign("ec1", claims(), nil), as.sign("rot1", claims(), nil)
	run := func(tok string, wantErr bool) {
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for range 32 {
			wg.Go(func() {
				_, err := v.VerifyToken(context.Background(), tok)
				if (err != nil) != wantErr {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("unexpected result: %v", err)
		}
	}
	run(good, false)
	if n := as.hits.Load(); n != 1 {
		t.Fatalf("cold burst fetched %d times, want 1", n)
	}
	run(unknown, true)
	if n := as.hits.Load(); n != 2 {
		t.Fatalf("unknown-kid burst: %d fetches in all, want 2", n)
	}
}

// A client that disconnects during the first JWKS fetch must not poison
// the cache for everyone else for RefreshMinInterval.
func TestJWKSFetchSurvivesCallerCancel(t *testing.T) {
	as := newTestAS(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	as.body = func(w http.ResponseWriter, r *http.Request) bool {
		once.Do(func() { close(arrived) })
		<-release
		return false // then serve the JWKS
	}
	v := as.newVerifier(t, nil)
	tok := as.sign("ec1", claims(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := v.VerifyToken(ctx, tok)
		done <- err
	}()
	<-arrived
	cancel() // the first caller goes away mid-fetch
	close(release)
	<-done
	if _, err := v.VerifyToken(context.Background(), tok); err != nil {
		t.Fatalf("after the first caller cancelled: %v", err)
	}
	if n := as.hits.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
}
