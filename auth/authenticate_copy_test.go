package auth

import (
	"context"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// sharedTokenVerifiers are the shipped verifiers with their cache on, each
// with a token whose claims nest an object and an array.
func sharedTokenVerifiers(t *testing.T) map[string]struct {
	v   TokenVerifier
	tok string
} {
	as := newTestAS(t)
	c := claims()
	c["org"] = map[string]any{"id": "o-1", "roles": []any{"reader"}}
	c["groups"] = []any{"a", "b"}
	f := newFakeIntrospection(t)
	resp := activeResp(time.Now().Add(time.Hour))
	resp["org"] = map[string]any{"id": "o-1", "roles": []any{"reader"}}
	resp["groups"] = []any{"a", "b"}
	f.set("opaque-1", resp)
	return map[string]struct {
		v   TokenVerifier
		tok string
	}{
		"jwt":           {as.newVerifier(t, nil), as.sign("ec1", c, nil)},
		"introspection": {f.verifier(t, nil), "opaque-1"},
	}
}

// authSnapshot is a deep copy of what Authenticate returned.
type authSnapshot struct {
	info pmcp.AuthInfo
	actx pmcp.AuthContext
}

func snapshot(info *pmcp.AuthInfo, actx *pmcp.AuthContext) authSnapshot {
	s := authSnapshot{info: *info, actx: *actx}
	s.info.Scopes = append([]string(nil), info.Scopes...)
	s.info.Extra = maps.Clone(info.Extra)
	s.actx.Scopes = append([]string(nil), actx.Scopes...)
	s.actx.Claims = copyJSON(map[string]any(actx.Claims)).(map[string]any)
	return s
}

// scribble changes everything a handler could change in what it got.
func scribble(info *pmcp.AuthInfo, actx *pmcp.AuthContext) {
	info.Scopes[0], actx.Scopes[0] = "admin", "admin"
	info.Extra["issuer"] = "https://evil.example"
	actx.Claims["sub"] = "mallory"
	actx.Claims["org"].(map[string]any)["id"] = "o-evil"
	actx.Claims["org"].(map[string]any)["roles"].([]any)[0] = "owner"
	actx.Claims["groups"].([]any)[0] = "admins"
}

// TestAuthenticateClaimsPrivatePerRequest: what Authenticate hands a
// request (scopes, extra, claims at every depth) is that request's own,
// though the verifier answers a repeated token from its cache: a handler
// changing it changes nothing for the next request with the same token,
// nor for concurrent ones (run with -race).
func TestAuthenticateClaimsPrivatePerRequest(t *testing.T) {
	for name, c := range sharedTokenVerifiers(t) {
		t.Run(name, func(t *testing.T) {
			a := newTestAuthenticator(t, c.v, nil)
			info, actx, err := a.Authenticate(bearerRequest(c.tok))
			if err != nil {
				t.Fatal(err)
			}
			want := snapshot(info, actx)
			if want.actx.Claims["org"].(map[string]any)["id"] != "o-1" {
				t.Fatalf("claims %v", want.actx.Claims)
			}
			scribble(info, actx)
			for range 2 {
				info, actx, err := a.Authenticate(bearerRequest(c.tok))
				if err != nil {
					t.Fatal(err)
				}
				if got := snapshot(info, actx); !reflect.DeepEqual(got, want) {
					t.Fatalf("after a handler changed its copy:\n got %+v\nwant %+v", got, want)
				}
				scribble(info, actx)
			}
			tok, err := c.v.VerifyToken(context.Background(), c.tok)
			if err != nil || tok.Subject != "user-1" || tok.Claims["org"].(map[string]any)["id"] != "o-1" || tok.Scopes[0] != "mcp:tools" {
				t.Fatalf("the verifier's token changed: %v %+v", err, tok)
			}
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 20 {
						info, actx, err := a.Authenticate(bearerRequest(c.tok))
						if err != nil {
							t.Error(err)
							return
						}
						scribble(info, actx)
					}
				})
			}
			wg.Wait()
		})
	}
}
