package oauth

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

type parsed struct {
	scheme string
	params map[string]string
}

func TestParseChallenges(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []parsed
	}{
		{[]string{`Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp", scope="a b"`},
			[]parsed{{"Bearer", map[string]string{"resource_metadata": "https://rs.example/.well-known/oauth-protected-resource/mcp", "scope": "a b"}}}},
		{[]string{`Bearer error="insufficient_scope", scope="mcp:write", error_description="need \"write\""`},
			[]parsed{{"Bearer", map[string]string{"error": "insufficient_scope", "scope": "mcp:write", "error_description": `need "write"`}}}},
		{[]string{`DPoP algs="ES256 PS256", error=use_dpop_nonce, Bearer realm="x"`},
			[]parsed{{"DPoP", map[string]string{"algs": "ES256 PS256", "error": "use_dpop_nonce"}}, {"Bearer", map[string]string{"realm": "x"}}}},
		{[]string{`Basic abc123==, Bearer Scope="s"`},
			[]parsed{{"Basic", map[string]string{}}, {"Bearer", map[string]string{"scope": "s"}}}},
		{[]string{`Bearer`, `DPoP nonce=x`},
			[]parsed{{"Bearer", map[string]string{}}, {"DPoP", map[string]string{"nonce": "x"}}}},
		{[]string{`Bearer scope="unterminated`}, []parsed{{"Bearer", map[string]string{}}}},
		{[]string{`Bearer scope="first", scope="second"`}, []parsed{{"Bearer", map[string]string{"scope": "first"}}}},
		{[]string{`"quoted"`}, nil},
	} {
		got := ParseChallenges(tc.in)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].Scheme == tc.want[i].scheme && maps.Equal(got[i].Params, tc.want[i].params)
		}
		if !ok {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	chs := ParseChallenges([]string{`Basic realm="r", Bearer resource_metadata="u", scope="a  b", error=invalid_token, error_description="d", algs="ES256"`})
	if v := ChallengeParam(chs, "resource_metadata"); v != "u" {
		t.Errorf("ChallengeParam = %q", v)
	}
	if c := chs[1]; c.ResourceMetadata != "u" || !slices.Equal(c.Scope, []string{"a", "b"}) || c.Error != ErrorInvalidToken ||
		c.ErrorDescription != "d" || !slices.Equal(c.Algs, []string{"ES256"}) || c.Param("realm") != "" || chs[0].Param("realm") != "r" {
		t.Errorf("fields: %+v", c)
	}
	if v := ChallengeParam(ParseChallenges([]string{`Digest resource_metadata="u"`}), "resource_metadata"); v != "" {
		t.Errorf("a non-Bearer/DPoP challenge gave %q", v)
	}
}

// FuzzParseChallenges feeds peer-controlled header values to the
// challenge parser: it must not panic, must stay within its bounds, and
// every value it returns must come from the input.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://rs.example/prm", scope="a b"`,
		`Bearer error="insufficient_scope", scope="x", error_description="a \"q\" b"`,
		`DPoP error="use_dpop_nonce", algs="ES256", Bearer realm=x`,
		`Basic abc==, Bearer scope="s"`,
		`Bearer scope="unterminated`,
		`, ,Bearer,,scope=`,
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		chs := ParseChallenges([]string{s, s})
		if len(chs) > maxChallenges {
			t.Fatalf("%d challenges", len(chs))
		}
		for _, c := range chs {
			if c.Scheme == "" || !strings.Contains(s, c.Scheme) {
				t.Fatalf("scheme %q not from the input", c.Scheme)
			}
			if len(c.Params) > maxChallengeParams {
				t.Fatalf("%d params", len(c.Params))
			}
			for k, v := range c.Params {
				if !strings.Contains(strings.ToLower(s), k) || len(v) > len(s) {
					t.Fatalf("param %q=%q not from the input", k, v)
				}
				if utf8.ValidString(s) && !utf8.ValidString(v) {
					t.Fatalf("invalid UTF-8 value %q from valid input", v)
				}
			}
		}
	})
}

// FuzzChallengeRoundTrip: what String writes, ParseChallenges reads back
// as the same challenge (the values String kept after dropping what the
// grammar does not allow).
func FuzzChallengeRoundTrip(f *testing.F) {
	f.Add("Bearer", "https://x/.well-known/oauth-protected-resource/mcp", "a b", "invalid_token", `bad "quote" \ \r\n`, "")
	f.Add("DPoP", "", "", "invalid_dpop_proof", "", "ES256 EdDSA")
	f.Add("", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, scheme, rm, scope, code, desc, algs string) {
		if scheme != SchemeDPoP {
			scheme = SchemeBearer
		}
		c := Challenge{Scheme: scheme, ResourceMetadata: rm, Scope: strings.Fields(scope), Error: code, ErrorDescription: desc, Algs: strings.Fields(algs)}
		s := c.String()
		chs := ParseChallenges([]string{s})
		if len(chs) != 1 {
			t.Fatalf("%q parsed as %d challenges", s, len(chs))
		}
		got := chs[0]
		want := Challenge{
			Scheme:           scheme,
			ResourceMetadata: quotable(rm, false),
			Scope:            strings.Fields(joinTokens(c.Scope)),
			Error:            quotable(code, false),
			ErrorDescription: quotable(desc, true),
			Algs:             strings.Fields(joinTokens(c.Algs)),
		}
		if got.Scheme != want.Scheme || got.ResourceMetadata != want.ResourceMetadata || !slices.Equal(got.Scope, want.Scope) ||
			got.Error != want.Error || got.ErrorDescription != want.ErrorDescription || !slices.Equal(got.Algs, want.Algs) {
			t.Fatalf("%q:\n got %+v\nwant %+v", s, got, want)
		}
	})
}
