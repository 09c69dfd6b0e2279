package auth

import (
	"context"
	"testing"
	"time"
)

// The hit path of the verified-token cache allocates nothing: the token
// is hashed in place, the key set is checked without building a list of
// matching keys, and the Authenticator reads the cached Token instead of
// a copy (it copies only what it hands out).
func TestJWTCacheHitAllocs(t *testing.T) {
	as := newTestAS(t)
	v := as.newVerifier(t, nil)
	a := newTestAuthenticator(t, v, nil)
	ctx := context.Background()
	var tok string
	for _, kid := range []string{"rsa1", "ed1", "ec1"} {
		tok = as.sign(kid, claims(), nil)
		if _, err := v.VerifyToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		n := testing.AllocsPerRun(100, func() {
			got, shared, err := v.verifyShared(ctx, tok)
			if err != nil || !shared || got.Subject != "user-1" {
				t.Fatalf("%v %v %+v", err, shared, got)
			}
		})
		if n != 0 && !raceEnabled {
			t.Errorf("%s: a cache hit allocates %.0f times, want 0", kid, n)
		}
	}
	r := bearerRequest(tok)
	authn := testing.AllocsPerRun(100, func() {
		if _, _, err := a.Authenticate(r); err != nil {
			t.Fatal(err)
		}
	})
	if raceEnabled {
		return
	}
	t.Logf("Authenticate on a cache hit: %.0f allocations", authn)
	// AuthInfo, AuthContext, the scopes, the extra map (map, group, the
	// issuer boxed) and the copy of the claims (a map of 8 entries: map
	// and group).
	if authn > 8 {
		t.Errorf("Authenticate on a cache hit allocates %.0f times, want at most 8", authn)
	}
}

// A key set fetched again (it grew old) that still has the signing key
// keeps the key object the remembered tokens were verified with, so they
// keep hitting the cache without comparing key material or allocating.
func TestJWKSRefetchKeepsUnchangedKeys(t *testing.T) {
	as := newTestAS(t)
	clock := time.Now()
	v := as.newVerifier(t, func(o *JWTOptions) { o.MaxAge = time.Minute })
	v.now = func() time.Time { return clock }
	tok := as.sign("ec1", claims(), nil)
	ctx := context.Background()
	if _, err := v.VerifyToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	ve := v.cache.get(tokenKey(tok))
	fetches := v.Fetches()
	clock = clock.Add(2 * time.Minute) // the key set is now old
	if _, shared, err := v.verifyShared(ctx, tok); err != nil || !shared {
		t.Fatalf("after the refetch: err %v, hit %v", err, shared)
	}
	if v.Fetches() != fetches+1 {
		t.Fatalf("fetches %d, want %d", v.Fetches(), fetches+1)
	}
	v.keys.mu.Lock()
	kept := false
	for _, k := range v.keys.keys {
		kept = kept || (k.KeyID == "ec1" && samePointer(k.Key, ve.pub))
	}
	v.keys.mu.Unlock()
	if !kept {
		t.Fatal("the refetched key set holds a new object for the unchanged key ec1")
	}
	if n := testing.AllocsPerRun(50, func() { _, _, _ = v.verifyShared(ctx, tok) }); n != 0 && !raceEnabled {
		t.Fatalf("a hit after the refetch allocates %.0f times", n)
	}
}
