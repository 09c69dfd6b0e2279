package oauth

import (
	"strings"
	"testing"
)

func TestChallengeString(t *testing.T) {
	cases := []struct {
		c    Challenge
		want string
	}{
		{Challenge{}, "Bearer"},
		{Challenge{ResourceMetadata: "https://x/.well-known/oauth-protected-resource/mcp", Scope: []string{"a", "b"}},
			`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope="a b"`},
		{Challenge{Scope: []string{"a"}, Error: ErrorInvalidToken, ErrorDescription: `bad "token"` + "\r\n\\x"},
			`Bearer scope="a", error="invalid_token", error_description="bad tokenx"`},
		{Challenge{Scheme: SchemeDPoP, Algs: []string{"ES256", "EdDSA"}, Error: ErrorInvalidDPoPProof},
			`DPoP error="invalid_dpop_proof", algs="ES256 EdDSA"`},
		{Challenge{Scope: []string{"ok", `b"ad`, "", "sp ace"}}, `Bearer scope="ok"`},
	}
	for _, tc := range cases {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// FuzzChallengeString: whatever a challenge is built from (error
// descriptions may carry peer-influenced text), the header value is a
// single line of printable ASCII whose quoted values never break out.
func FuzzChallengeString(f *testing.F) {
	f.Add("https://x/.well-known/oauth-protected-resource", "a b", "invalid_token", `bad "quote" \ \r\n`)
	f.Add("", "", "", "\xff\x00")
	f.Fuzz(func(t *testing.T, rm, scope, code, desc string) {
		s := Challenge{ResourceMetadata: rm, Scope: strings.Fields(scope), Error: code, ErrorDescription: desc}.String()
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e || s[i] == '\\' {
				t.Fatalf("byte %#x in %q", s[i], s)
			}
		}
		// Every quote belongs to a name="value" pair: even count, and each
		// value is followed by the end or ", ".
		if strings.Count(s, `"`)%2 != 0 {
			t.Fatalf("odd quotes in %q", s)
		}
		rest := strings.TrimPrefix(s, "Bearer")
		for rest != "" {
			rest = strings.TrimPrefix(strings.TrimPrefix(rest, " "), ", ")
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				t.Fatalf("no pair in %q", rest)
			}
			end := strings.IndexByte(rest[eq+2:], '"')
			rest = rest[eq+2+end+1:]
			if rest != "" && !strings.HasPrefix(rest, ", ") {
				t.Fatalf("value broke out in %q", s)
			}
		}
	})
}
