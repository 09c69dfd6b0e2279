package auth

import (
	"context"
	"testing"
)

// BenchmarkAuthenticateJWT is the per-request cost of a JWT bearer token
// with a warm JWKS cache (the same token each time, so after the first
// request it is a hit of the verified-token cache).
func BenchmarkAuthenticateJWT(b *testing.B) {
	for _, kid := range []string{"ec1", "rsa1", "ed1"} {
		b.Run(kid, func(b *testing.B) {
			as := newTestAS(b)
			v := as.newVerifier(b, nil)
			a := newTestAuthenticator(b, v, nil)
			tok := as.sign(kid, claims(), nil)
			if _, err := v.VerifyToken(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := a.Authenticate(bearerRequest(tok)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAuthenticateJWTUncached is the same with the verified-token
// cache off: every request verifies the signature (each token is new).
func BenchmarkAuthenticateJWTUncached(b *testing.B) {
	for _, kid := range []string{"ec1", "rsa1", "ed1"} {
		b.Run(kid, func(b *testing.B) {
			as := newTestAS(b)
			v := as.newVerifier(b, func(o *JWTOptions) { o.VerifiedTokenCacheSize = -1 })
			a := newTestAuthenticator(b, v, nil)
			tok := as.sign(kid, claims(), nil)
			if _, err := v.VerifyToken(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := a.Authenticate(bearerRequest(tok)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyJWTHit is the verifier alone on a remembered token (no
// request to build or parse): the cost of a verified-token cache hit.
func BenchmarkVerifyJWTHit(b *testing.B) {
	as := newTestAS(b)
	v := as.newVerifier(b, nil)
	tok := as.sign("ec1", claims(), nil)
	if _, err := v.VerifyToken(context.Background(), tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyToken(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}
