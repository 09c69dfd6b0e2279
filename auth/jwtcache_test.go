package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// with returns valid claims with k set to val.
func with(k string, val any) map[string]any {
	c := claims()
	c[k] = val
	return c
}

// A token verified once is not verified again: the second check of the
// same token costs a hash and a map lookup, not a signature verification
// (which go-jose does with ~100 allocations).
func TestJWTVerifierCachesVerifiedToken(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	tok := as.sign("ec1", claims(), nil)
	first, err := v.VerifyToken(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		got, err := v.VerifyToken(context.Background(), tok)
		if err != nil || got.Subject != first.Subject {
			t.Fatalf("%v %+v", err, got)
		}
	})
	if allocs > 20 {
		t.Fatalf("a repeated verification of the same token allocates %.0f times; want at most 20 (a cache hit)", allocs)
	}
}

// A hit returns the same identity as the full verification, and a copy:
// changing what one caller got changes nothing for the next.
func TestJWTCacheHitSameIdentityAndCopied(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	c := claims()
	c["cnf"] = map[string]any{"jkt": "thumb"}
	c["groups"] = []any{"a", "b"}
	tok := as.sign("ec1", c, nil)
	first, err := v.VerifyToken(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := first.clone()
	// Scribble over everything the first caller got.
	first.Subject, first.Scopes[0], first.Audience[0] = "mallory", "admin", "x"
	first.Claims["sub"] = "mallory"
	first.Claims["cnf"].(map[string]any)["jkt"] = "other"
	first.Claims["groups"].([]any)[0] = "admin"
	if v.CacheLen() != 1 {
		t.Fatalf("CacheLen %d, want 1", v.CacheLen())
	}
	for range 2 {
		got, err := v.VerifyToken(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("hit returned %+v, want %+v", got, want)
		}
		got.Claims["cnf"].(map[string]any)["jkt"] = "other"
		got.Scopes[0] = "admin"
	}
}

// Refused tokens are never remembered, and a refused token stays refused
// on every try.
func TestJWTCacheRefusedNotCached(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	good := as.sign("ec1", claims(), nil)
	// Same header and payload, signature of another token.
	other := as.sign("ec1", with("sub", "someone-else"), nil)
	forged := good[:strings.LastIndexByte(good, '.')] + other[strings.LastIndexByte(other, '.'):]
	wrongAud := as.sign("ec1", with("aud", "https://other.example.com/mcp"), nil)
	for _, tok := range []string{forged, wrongAud} {
		for range 3 {
			if _, err := v.VerifyToken(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("err %v, want ErrInvalidToken", err)
			}
		}
	}
	if n := v.CacheLen(); n != 0 {
		t.Fatalf("CacheLen %d after refused tokens, want 0", n)
	}
	// The genuine token is still accepted, and its forgery still refused.
	if _, err := v.VerifyToken(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyToken(context.Background(), forged); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("forged after genuine: %v", err)
	}
}

// A remembered token is refused at the same instants as a token checked
// in full: around exp and exp+leeway, and before nbf-leeway when the
// clock goes back.
func TestJWTCacheExpiresLikeUncached(t *testing.T) {
	as := newTestAS(t)
	base := time.Now().Truncate(time.Second)
	exp := base.Add(10 * time.Minute)
	nbf := base.Add(-time.Minute)
	c := claims()
	c["iat"], c["nbf"], c["exp"] = nbf.Unix(), nbf.Unix(), exp.Unix()
	tok := as.sign("ec1", c, nil)
	instants := []time.Time{
		base, exp.Add(-time.Second), exp, exp.Add(DefaultLeeway - time.Nanosecond), exp.Add(DefaultLeeway),
		exp.Add(DefaultLeeway + time.Nanosecond), exp.Add(DefaultLeeway + time.Second),
		nbf.Add(-DefaultLeeway), nbf.Add(-DefaultLeeway - time.Nanosecond), nbf.Add(-DefaultLeeway - time.Second),
	}
	for _, leeway := range []time.Duration{0, -1, 5 * time.Second} {
		for _, at := range instants {
			clock := base
			mk := func(size int) *JWTVerifier {
				v := as.newVerifier(t, func(o *JWTOptions) { o.VerifiedTokenCacheSize, o.Leeway = size, leeway })
				v.now = func() time.Time { return clock }
				return v
			}
			cached, uncached := mk(0), mk(-1)
			if _, err := cached.VerifyToken(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
			if cached.CacheLen() != 1 || uncached.CacheLen() != 0 {
				t.Fatalf("CacheLen %d/%d, want 1/0", cached.CacheLen(), uncached.CacheLen())
			}
			clock = at
			_, errC := cached.VerifyToken(context.Background(), tok)
			_, errU := uncached.VerifyToken(context.Background(), tok)
			if (errC == nil) != (errU == nil) {
				t.Fatalf("leeway %v, at exp%+v: cached verdict %v, uncached %v", leeway, at.Sub(exp), errC, errU)
			}
		}
	}
}

// A key set that no longer has the signing key (kid removed, or the kid
// now names other key material) refuses the remembered token once it is
// refreshed.
func TestJWTCacheKeyRotationInvalidates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rotate func(as *testAS)
	}{
		{"kid removed", func(as *testAS) { as.publish("rsa1", "ed1") }},
		{"kid re-keyed", func(as *testAS) {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			as.mu.Lock()
			as.keys["ec1"] = testKey{"ec1", jose.ES256, k}
			as.mu.Unlock()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			clock := time.Now()
			v := as.newVerifier(t, func(o *JWTOptions) { o.MaxAge = time.Minute })
			v.now = func() time.Time { return clock }
			tok := as.sign("ec1", claims(), nil)
			if _, err := v.VerifyToken(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
			if v.CacheLen() != 1 {
				t.Fatalf("CacheLen %d, want 1", v.CacheLen())
			}
			tc.rotate(as)
			// Before the key set is refreshed, the old keys still rule.
			if _, err := v.VerifyToken(context.Background(), tok); err != nil {
				t.Fatalf("before refresh: %v", err)
			}
			fetches := v.Fetches()
			clock = clock.Add(2 * time.Minute) // the key set is now old
			if _, err := v.VerifyToken(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("after refresh: err %v, want ErrInvalidToken", err)
			}
			if v.Fetches() == fetches {
				t.Fatal("the key set was not refreshed")
			}
			if v.CacheLen() != 0 {
				t.Fatalf("CacheLen %d after rotation, want 0", v.CacheLen())
			}
		})
	}
}

// Distinct tokens never share an entry, and the cache stays within its
// bound (the least recently used go first).
func TestJWTCacheDistinctTokensAndBounded(t *testing.T) {
	as := newTestAS(t)
	const size = 64
	v := as.newVerifier(t, func(o *JWTOptions) { o.VerifiedTokenCacheSize = size })
	toks := make([]string, 200)
	for i := range toks {
		toks[i] = as.sign("ec1", with("sub", fmt.Sprintf("user-%d", i)), nil)
	}
	for round := range 2 {
		for i, tok := range toks {
			got, err := v.VerifyToken(context.Background(), tok)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("user-%d", i); got.Subject != want {
				t.Fatalf("round %d: token %d verified as %q, want %q", round, i, got.Subject, want)
			}
			if n := v.CacheLen(); n > size {
				t.Fatalf("CacheLen %d > %d", n, size)
			}
		}
	}
	if n := v.CacheLen(); n != size {
		t.Fatalf("CacheLen %d, want %d", n, size)
	}
}

// Under 10,000 distinct valid tokens the default cache holds at most
// DefaultVerifiedTokenCacheSize of them.
func TestJWTCacheBoundedDefault(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	c := claims()
	var heapBefore runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heapBefore)
	for i := range 10000 {
		c["sub"] = fmt.Sprintf("user-%d", i)
		if _, err := v.VerifyToken(context.Background(), as.sign("ed1", c, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.CacheLen(); n != DefaultVerifiedTokenCacheSize {
		t.Fatalf("CacheLen %d, want %d", n, DefaultVerifiedTokenCacheSize)
	}
	var heapAfter runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heapAfter)
	perEntry := (int64(heapAfter.HeapAlloc) - int64(heapBefore.HeapAlloc)) / DefaultVerifiedTokenCacheSize
	t.Logf("heap per cached token: %d B", perEntry)
	if perEntry > 8<<10 {
		t.Fatalf("heap per cached token %d B > 8 KiB", perEntry)
	}
	runtime.KeepAlive(v)
}

// Concurrent hits, misses and evictions (run with -race).
func TestJWTCacheConcurrent(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, func(o *JWTOptions) { o.VerifiedTokenCacheSize = 4 })
	toks := make([]string, 8)
	for i := range toks {
		toks[i] = as.sign("ec1", with("sub", fmt.Sprintf("user-%d", i)), nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				n := (g + i) % len(toks)
				if i%2 == 0 {
					n = g % 2 // two hot tokens
				}
				got, err := v.VerifyToken(context.Background(), toks[n])
				if err == nil && got.Subject != fmt.Sprintf("user-%d", n) {
					err = fmt.Errorf("token %d verified as %q", n, got.Subject)
				}
				if err != nil {
					errs <- err
					return
				}
				got.Claims["sub"] = "scribbled"
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := v.CacheLen(); n > 4 {
		t.Fatalf("CacheLen %d > 4", n)
	}
}

// A DPoP-bound token that is remembered still needs a fresh, valid proof
// on every request: the proof is checked by the Authenticator after the
// verifier, hit or not.
func TestJWTCacheDPoPProofStillChecked(t *testing.T) {
	as := newTestAS(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	v := as.newVerifier(t, nil)
	a := newTestAuthenticator(t, v, func(o *Options) { o.DPoP = DPoPAllowed })
	c := claims()
	c["cnf"] = map[string]any{"jkt": thumbprint(t, key.Public())}
	tok := as.sign("ec1", c, nil)
	jti := 0
	mkProof := func(signer *ecdsa.PrivateKey) string {
		jti++
		return proof(t, signer, jose.ES256, "dpop+jwt", map[string]any{
			"jti": fmt.Sprintf("p-%d", jti), "htm": http.MethodPost, "htu": testResource,
			"iat": time.Now().Unix(), "ath": athOf(tok),
		})
	}
	p1 := mkProof(key)
	if _, _, err := a.Authenticate(dpopRequest(tok, p1)); err != nil {
		t.Fatal(err)
	}
	if v.CacheLen() != 1 {
		t.Fatalf("CacheLen %d, want 1", v.CacheLen())
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*http.Request{
		"replayed proof":        dpopRequest(tok, p1),
		"no proof":              dpopRequest(tok),
		"proof by another key":  dpopRequest(tok, mkProof(other)),
		"bound token as bearer": bearerRequest(tok),
	} {
		if _, _, err := a.Authenticate(r); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
	if _, _, err := a.Authenticate(dpopRequest(tok, mkProof(key))); err != nil {
		t.Fatalf("fresh proof: %v", err)
	}
}
