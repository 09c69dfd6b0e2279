package auth

import (
	"net/http"
	"testing"
)

// FuzzParseAuthorization feeds peer-controlled Authorization headers: no
// panic, an accepted token is a b64token within the cap, and rendering it
// back parses to the same credentials.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer abc", "DPoP x.y.z", "bearer  a==", "Bearer", "Basic Zm9v", "Bearer a b", "Bearer \x00", ""} {
		f.Add(s, "")
	}
	f.Add("Bearer a", "Bearer b")
	f.Fuzz(func(t *testing.T, v1, v2 string) {
		h := http.Header{}
		if v1 != "" {
			h.Add("Authorization", v1)
		}
		if v2 != "" {
			h.Add("Authorization", v2)
		}
		c, err := parseAuthorization(h, 64)
		if err != nil {
			return
		}
		if c.scheme == "" {
			if c.token != "" {
				t.Fatalf("token without scheme: %+v", c)
			}
			return
		}
		if len(c.token) > 64 || !isB64Token(c.token) {
			t.Fatalf("accepted token %q", c.token)
		}
		again, err := parseAuthorization(http.Header{"Authorization": {c.scheme + " " + c.token}}, 64)
		if err != nil || again != c {
			t.Fatalf("round trip %+v -> %+v, %v", c, again, err)
		}
	})
}

// FuzzParseJWKS: a hostile or broken JWKS never panics and never yields
// a key that is not an asymmetric public signing key.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"a"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AAAA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseJWKS(b)
		if err != nil {
			return
		}
		for _, k := range keys {
			if !asymmetric(k.Key) || !k.IsPublic() {
				t.Fatalf("unusable key kept: %T", k.Key)
			}
		}
	})
}
