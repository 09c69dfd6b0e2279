package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
)

func TestParseAuthorization(t *testing.T) {
	cases := []struct {
		vals   []string
		scheme string
		token  string
		err    error
	}{
		{nil, "", "", nil},
		{[]string{"Bearer abc.DEF-_~+/=="}, SchemeBearer, "abc.DEF-_~+/==", nil},
		{[]string{"bearer   abc"}, SchemeBearer, "abc", nil},
		{[]string{"DPoP abc"}, SchemeDPoP, "abc", nil},
		{[]string{"Basic dXNlcjpwYXNz"}, "", "", nil},
		{[]string{"Bearer"}, "", "", errMalformedToken},
		{[]string{"Bearer "}, "", "", errMalformedToken},
		{[]string{"Bearer a b"}, "", "", errMalformedToken},
		{[]string{"Bearer a=b"}, "", "", errMalformedToken},
		{[]string{"Bearer =abc"}, "", "", errMalformedToken},
		{[]string{`Bearer "abc"`}, "", "", errMalformedToken},
		{[]string{"Bearer a", "Bearer b"}, "", "", errMultipleAuthorization},
		{[]string{"Bearer " + strings.Repeat("a", 101)}, "", "", errTokenTooLarge},
	}
	for _, tc := range cases {
		h := http.Header{"Authorization": tc.vals}
		c, err := parseAuthorization(h, 100)
		if !errors.Is(err, tc.err) || c.scheme != tc.scheme || c.token != tc.token {
			t.Errorf("%q: got %+v, %v; want %s %q %v", tc.vals, c, err, tc.scheme, tc.token, tc.err)
		}
	}
}

// The 401 without a token has no error code; a refused token adds
// invalid_token; malformed headers are 400 invalid_request; missing
// scopes are 403 insufficient_scope naming all needed scopes.
func TestAuthenticatorChallenges(t *testing.T) {
	v := TokenVerifierFunc(func(_ context.Context, tok string) (*Token, error) {
		switch tok {
		case "good":
			return &Token{Subject: "u", Scopes: []string{"mcp:tools", "mcp:read"}}, nil
		case "narrow":
			return &Token{Subject: "u", Scopes: []string{"mcp:read"}}, nil
		case "anonymous":
			return &Token{Scopes: []string{"mcp:tools"}}, nil
		}
		return nil, ErrInvalidToken
	})
	a := newTestAuthenticator(t, v, nil)
	prm := "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

	_, _, err := a.Authenticate(bearerRequest(""))
	c := authErr(t, err, 401)
	if len(c) != 1 || c[0].scheme != "Bearer" || len(c[0].params) != 2 || c[0].params["resource_metadata"] != prm || c[0].params["scope"] != "mcp:tools" {
		t.Fatalf("no token: %+v", c)
	}

	_, _, err = a.Authenticate(bearerRequest("sekrit-token-123"))
	c = authErr(t, err, 401)
	if c[0].params["error"] != ErrorInvalidToken || c[0].params["error_description"] == "" || c[0].params["resource_metadata"] != prm {
		t.Fatalf("bad token: %+v", c)
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("error leaks the token: %v", err)
	}

	r := bearerRequest("good")
	r.Header.Add("Authorization", "Bearer other")
	_, _, err = a.Authenticate(r)
	if c = authErr(t, err, 400); c[0].params["error"] != ErrorInvalidRequest {
		t.Fatalf("two headers: %+v", c)
	}

	_, _, err = a.Authenticate(bearerRequest("narrow"))
	if c = authErr(t, err, 403); c[0].params["error"] != ErrorInsufficientScope || c[0].params["scope"] != "mcp:tools" {
		t.Fatalf("narrow: %+v", c)
	}

	_, _, err = a.Authenticate(bearerRequest("anonymous"))
	authErr(t, err, 401)

	info, actx, err := a.Authenticate(bearerRequest("good"))
	if err != nil || actx.Subject != "u" || info.Token.Reveal() != "good" || info.Resource != testResource {
		t.Fatalf("good: %+v %+v %v", info, actx, err)
	}

	// Step-up for an operation: every scope it needs, in one challenge,
	// the Authenticator's own (needed by every request) first.
	err = a.InsufficientScope(actx, "mcp:read", "files:write", "admin", "files:write")
	c = authErr(t, err, 403)
	if !errors.Is(err, pmcp.ErrInsufficientScope) {
		t.Fatal("the step-up error is not ErrInsufficientScope")
	}
	if c[0].params["scope"] != "mcp:tools mcp:read files:write admin" || c[0].params["error"] != ErrorInsufficientScope || c[0].params["resource_metadata"] != prm {
		t.Fatalf("step-up: %+v", c)
	}
	var se *ScopeError
	if !errors.As(err, &se) || strings.Join(se.Missing, " ") != "files:write admin" {
		t.Fatalf("ScopeError %+v", se)
	}
	if err := a.InsufficientScope(actx, "mcp:read"); err != nil {
		t.Fatal(err)
	}
	if err := a.InsufficientScope(nil, "mcp:read"); err == nil {
		t.Fatal("nil context passed a scope check")
	}
	var ae *pmcp.AuthError
	if !errors.As(err, &ae) {
		t.Fatal("not an AuthError")
	}
}

// A DPoP-bound token lacking an operation's scope is answered with a
// DPoP challenge (with algs); an unbound one, or any token when DPoP is
// off, with the Bearer challenge.
func TestInsufficientScopeDPoPBound(t *testing.T) {
	v := TokenVerifierFunc(func(context.Context, string) (*Token, error) { return nil, ErrInvalidToken })
	dp := newTestAuthenticator(t, v, func(o *Options) { o.DPoP = DPoPAllowed; o.DPoPOptions.Algorithms = []string{"ES256"} })
	plain := newTestAuthenticator(t, v, nil)
	bound := &pmcp.AuthContext{Subject: "u", Scopes: []string{"mcp:tools"}, Claims: pmcp.Attributes{"cnf": map[string]any{"jkt": "abc"}}}
	unbound := &pmcp.AuthContext{Subject: "u", Scopes: []string{"mcp:tools"}, Claims: pmcp.Attributes{}}
	for _, tc := range []struct {
		name   string
		a      *Authenticator
		actx   *pmcp.AuthContext
		scheme string
	}{
		{"bound, DPoP on", dp, bound, "DPoP"},
		{"unbound, DPoP on", dp, unbound, "Bearer"},
		{"bound, DPoP off", plain, bound, "Bearer"},
	} {
		err := tc.a.InsufficientScope(tc.actx, "mcp:deploy")
		c := authErr(t, err, 403)
		if len(c) != 1 || c[0].scheme != tc.scheme || c[0].params["error"] != ErrorInsufficientScope || c[0].params["scope"] != "mcp:tools mcp:deploy" ||
			c[0].params["resource_metadata"] != tc.a.ResourceMetadataURL() || (tc.scheme == "DPoP") != (c[0].params["algs"] == "ES256") {
			t.Errorf("%s: %+v", tc.name, c)
		}
		if !errors.Is(err, pmcp.ErrInsufficientScope) {
			t.Errorf("%s: not ErrInsufficientScope", tc.name)
		}
	}
}
