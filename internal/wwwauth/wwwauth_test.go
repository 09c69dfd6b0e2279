package wwwauth

import (
	"maps"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseWWWAuthenticate(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []Challenge
	}{
		{[]string{`Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp", scope="a b"`},
			[]Challenge{{"Bearer", map[string]string{"resource_metadata": "https://rs.example/.well-known/oauth-protected-resource/mcp", "scope": "a b"}}}},
		{[]string{`Bearer error="insufficient_scope", scope="mcp:write", error_description="need \"write\""`},
			[]Challenge{{"Bearer", map[string]string{"error": "insufficient_scope", "scope": "mcp:write", "error_description": `need "write"`}}}},
		{[]string{`DPoP algs="ES256 PS256", error=use_dpop_nonce, Bearer realm="x"`},
			[]Challenge{{"DPoP", map[string]string{"algs": "ES256 PS256", "error": "use_dpop_nonce"}}, {"Bearer", map[string]string{"realm": "x"}}}},
		{[]string{`Basic abc123==, Bearer Scope="s"`},
			[]Challenge{{"Basic", map[string]string{}}, {"Bearer", map[string]string{"scope": "s"}}}},
		{[]string{`Bearer`, `DPoP nonce=x`},
			[]Challenge{{"Bearer", map[string]string{}}, {"DPoP", map[string]string{"nonce": "x"}}}},
		{[]string{`Bearer scope="unterminated`}, []Challenge{{"Bearer", map[string]string{}}}},
		{[]string{`Bearer scope="first", scope="second"`}, []Challenge{{"Bearer", map[string]string{"scope": "first"}}}},
		{[]string{`"quoted"`}, nil},
	} {
		got := Parse(tc.in)
		if !equalChallenges(got, tc.want) {
			t.Errorf("%q:\n got %v\nwant %v", tc.in, got, tc.want)
		}
	}
	if v := Param(Parse([]string{`Basic realm="r", Bearer resource_metadata="u"`}), "resource_metadata"); v != "u" {
		t.Errorf("Param = %q", v)
	}
	if v := Param(Parse([]string{`Digest resource_metadata="u"`}), "resource_metadata"); v != "" {
		t.Errorf("a non-Bearer/DPoP challenge gave %q", v)
	}
}

func equalChallenges(a, b []Challenge) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Scheme != b[i].Scheme || !maps.Equal(a[i].Params, b[i].Params) {
			return false
		}
	}
	return true
}

// FuzzParseWWWAuthenticate feeds peer-controlled header values to the
// challenge parser: it must not panic, must stay within its bounds, and
// every value it returns must come from the input.
func FuzzParseWWWAuthenticate(f *testing.F) {
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
		chs := Parse([]string{s, s})
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
