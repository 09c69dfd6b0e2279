package auth

import (
	"context"
	"testing"
)

// BenchmarkAuthenticateJWT is the per-request cost of a JWT bearer token
// with a warm JWKS cache.
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
