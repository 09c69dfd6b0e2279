package pmcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// authModes are the ways an Authenticate hook may describe the caller
// whose bearer token is tok. Every mode must keep alice's state from bob.
var authModes = []struct {
	name string
	auth func(tok string) (*AuthInfo, *AuthContext)
}{
	{"AuthInfo token only", func(tok string) (*AuthInfo, *AuthContext) {
		return &AuthInfo{Token: Secret(tok)}, nil
	}},
	{"AuthInfo token and a shared client id", func(tok string) (*AuthInfo, *AuthContext) {
		// Both users run the same client application: the client id
		// names the application, not the user.
		return &AuthInfo{Token: Secret(tok), ClientID: "the-same-app"}, nil
	}},
	{"AuthContext subject only", func(tok string) (*AuthInfo, *AuthContext) {
		return nil, &AuthContext{Subject: "user:" + tok}
	}},
	{"AuthContext token without subject", func(tok string) (*AuthInfo, *AuthContext) {
		return nil, &AuthContext{Token: Secret(tok)}
	}},
}

func bearerAuth(mode func(tok string) (*AuthInfo, *AuthContext)) func(r *http.Request) (*AuthInfo, *AuthContext, error) {
	return func(r *http.Request) (*AuthInfo, *AuthContext, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			return nil, nil, errors.New("no token")
		}
		info, actx := mode(tok)
		return info, actx, nil
	}
}

// newConfirmServer has a tool asking for a confirmation whose
// continuation is what the first caller sealed.
func newConfirmServer(t *testing.T) *Server {
	t.Helper()
	s := newTestServerT(t)
	type in struct {
		Secret string `json:"secret"`
	}
	if err := AddTool(s, &Tool{Name: "confirm"}, func(ctx context.Context, e *RequestHandlerExtra, _ struct{}) (string, error) {
		if cont := e.MRTRContinuation(); cont != nil {
			return "resumed " + string(cont), nil
		}
		return "", e.RequireInput(map[string]*InputRequest{"q": {Method: MethodElicitationCreate, Params: &ElicitParams{Message: "sure?"}}}, in{Secret: "alice's continuation"})
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func bodyOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRequestStateBoundToPrincipalHTTP: a modern requestState minted for
// alice cannot be replayed by bob, whatever part of the auth result names
// them; alice herself resumes.
func TestRequestStateBoundToPrincipalHTTP(t *testing.T) {
	caps := map[string]any{"elicitation": map[string]any{}}
	for _, mode := range authModes {
		t.Run(mode.name, func(t *testing.T) {
			e := newHTTPEnv(t, newConfirmServer(t), &StreamableHTTPOptions{Authenticate: bearerAuth(mode.auth)})
			call := func(tok string, params map[string]any) (*http.Response, *rpcReply) {
				h := modernHeaders(MethodToolsCall, "confirm", "Accept", "application/json", "Authorization", "Bearer "+tok)
				resp := e.post(modernBody(1, MethodToolsCall, params, caps), h)
				return resp, readJSON(t, resp)
			}
			_, first := call("alice-token", map[string]any{"name": "confirm"})
			var ir struct {
				ResultType   string `json:"resultType"`
				RequestState string `json:"requestState"`
			}
			if err := json.Unmarshal(first.Result, &ir); err != nil || ir.ResultType != resultTypeInputRequired || ir.RequestState == "" {
				t.Fatalf("first round: %s %v", first.Result, err)
			}
			retry := map[string]any{"name": "confirm", "requestState": ir.RequestState,
				"inputResponses": map[string]any{"q": map[string]any{"action": "accept"}}}
			resp, stolen := call("bob-token", retry)
			if stolen.Error == nil || stolen.Error.Code != -32602 {
				t.Fatalf("bob replayed alice's requestState: status %d result %s error %+v", resp.StatusCode, stolen.Result, stolen.Error)
			}
			resp, own := call("alice-token", retry)
			if own.Error != nil || !strings.Contains(textOf(t, own.Result), "alice's continuation") {
				t.Fatalf("alice could not resume: status %d %s %+v", resp.StatusCode, own.Result, own.Error)
			}
		})
	}
}

// TestHTTPSessionBoundToPrincipalModes: a legacy session opened by alice
// answers bob exactly as an unknown session does, whatever part of the auth
// result names them.
func TestHTTPSessionBoundToPrincipalModes(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, mode := range authModes {
		t.Run(mode.name, func(t *testing.T) {
			srv, _ := newHTTPTestServer(t)
			e := newHTTPEnv(t, srv, &StreamableHTTPOptions{Authenticate: bearerAuth(mode.auth)})
			sid := e.initSession(hdr("Authorization", "Bearer alice-token"))
			stolen := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", sid, "Authorization", "Bearer bob-token"))
			unknown := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", "unknown-id", "Authorization", "Bearer bob-token"))
			sb, ub := bodyOf(t, stolen), bodyOf(t, unknown)
			if stolen.StatusCode != 404 || unknown.StatusCode != 404 || sb != ub {
				t.Fatalf("bob on alice's session: %d %s; unknown session: %d %s", stolen.StatusCode, sb, unknown.StatusCode, ub)
			}
			own := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", sid, "Authorization", "Bearer alice-token"))
			if r := readJSON(t, own); own.StatusCode != 200 || r.Error != nil {
				t.Fatalf("alice refused on her own session: %d %+v", own.StatusCode, r.Error)
			}
		})
	}
}

func TestPrincipalOf(t *testing.T) {
	tok := "s3cr3t-token"
	cases := []struct {
		name string
		info *AuthInfo
		actx *AuthContext
		want string
		ok   bool
	}{
		{"unauthenticated", nil, nil, "", true},
		{"subject wins", &AuthInfo{Token: Secret(tok), ClientID: "app"}, &AuthContext{Subject: "alice", Token: Secret(tok)}, "sub:alice", true},
		{"info token", &AuthInfo{Token: Secret(tok), ClientID: "app"}, nil, wantTokenPrincipal(tok), true},
		{"context token", nil, &AuthContext{Token: Secret(tok), ClientID: "app"}, wantTokenPrincipal(tok), true},
		{"info client id", &AuthInfo{ClientID: "app"}, nil, "client:app", true},
		{"context client id", nil, &AuthContext{ClientID: "app"}, "client:app", true},
		{"empty info", &AuthInfo{Scopes: []string{"read"}}, nil, "", false},
		{"empty context", nil, &AuthContext{}, "", false},
		{"both empty", &AuthInfo{}, &AuthContext{}, "", false},
	}
	for _, c := range cases {
		got, ok := principalOf(c.info, c.actx)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
		if strings.Contains(got, tok) {
			t.Errorf("%s: the principal %q holds the raw token", c.name, got)
		}
		// The session check (principalMatches) agrees with principalOf: a
		// request matches its own principal, never another one, and one
		// that names nobody matches nothing.
		if m := principalMatches(c.want, c.info, c.actx); m != c.ok {
			t.Errorf("%s: principalMatches(own principal) = %v, want %v", c.name, m, c.ok)
		}
		for _, other := range []string{"", "sub:bob", wantTokenPrincipal("other-token"), "client:other", c.want + "x"} {
			if other != c.want && principalMatches(other, c.info, c.actx) {
				t.Errorf("%s: matches the principal %q", c.name, other)
			}
		}
	}
	long := &AuthContext{Subject: strings.Repeat("s", 300)}
	if id, _ := principalOf(nil, long); !principalMatches(id, nil, long) || principalMatches(id[:len(id)-1], nil, long) {
		t.Error("a subject longer than the stack buffer does not match itself")
	}
	// Kinds never collide: a subject spelled like a token's principal is
	// another principal.
	forged, _ := principalOf(nil, &AuthContext{Subject: wantTokenPrincipal(tok)})
	if real, _ := principalOf(&AuthInfo{Token: Secret(tok)}, nil); forged == real {
		t.Fatalf("subject and token principals collide: %q", real)
	}
	if a, b := wantTokenPrincipal("alice-token"), wantTokenPrincipal("bob-token"); a == b {
		t.Fatal("two tokens, one principal")
	}
}

// TestUnboundPrincipalRefused: an Authenticate hook that accepts a request
// without naming anybody lets it neither open a legacy session nor mint or
// resume a requestState, so two such callers never share state.
func TestUnboundPrincipalRefused(t *testing.T) {
	anon := func(r *http.Request) (*AuthInfo, *AuthContext, error) {
		return &AuthInfo{Scopes: []string{"mcp"}}, nil, nil
	}
	e := newHTTPEnv(t, newConfirmServer(t), &StreamableHTTPOptions{Authenticate: anon})
	resp := e.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, hdr("Accept", "application/json"))
	if r := readJSON(t, resp); resp.StatusCode != http.StatusForbidden || r.Error == nil || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize without a principal: %d %s %+v", resp.StatusCode, r.Result, r.Error)
	}
	caps := map[string]any{"elicitation": map[string]any{}}
	h := modernHeaders(MethodToolsCall, "confirm", "Accept", "application/json")
	resp = e.post(modernBody(1, MethodToolsCall, map[string]any{"name": "confirm"}, caps), h)
	if r := readJSON(t, resp); r.Error == nil || r.Error.Code != -32603 {
		t.Fatalf("input asked without a principal: %d %s %+v", resp.StatusCode, r.Result, r.Error)
	}
	// A requestState from elsewhere (here: sealed for alice) is refused.
	e2 := newHTTPEnv(t, e.srv, &StreamableHTTPOptions{Authenticate: bearerAuth(authModes[0].auth)})
	resp = e2.post(modernBody(1, MethodToolsCall, map[string]any{"name": "confirm"}, caps), modernHeaders(MethodToolsCall, "confirm", "Accept", "application/json", "Authorization", "Bearer alice-token"))
	var ir struct {
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(readJSON(t, resp).Result, &ir); err != nil || ir.RequestState == "" {
		t.Fatalf("no requestState: %v", err)
	}
	retry := map[string]any{"name": "confirm", "requestState": ir.RequestState, "inputResponses": map[string]any{"q": map[string]any{"action": "accept"}}}
	resp = e.post(modernBody(2, MethodToolsCall, retry, caps), h)
	if r := readJSON(t, resp); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("requestState resumed without a principal: %d %s %+v", resp.StatusCode, r.Result, r.Error)
	}
}

// wantTokenPrincipal is the principal of a bearer token, computed here
// independently of server_principal.go.
func wantTokenPrincipal(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return "token-sha256:" + hex.EncodeToString(sum[:])
}

// TestPrincipalMatchesAllocs: the session check of every legacy request
// allocates nothing, whether the principal is a subject or a token.
func TestPrincipalMatchesAllocs(t *testing.T) {
	tok := strings.Repeat("t", 800)
	for _, c := range []struct {
		info *AuthInfo
		actx *AuthContext
	}{
		{&AuthInfo{Token: Secret(tok)}, &AuthContext{Subject: "bench-user", Token: Secret(tok)}},
		{&AuthInfo{Token: Secret(tok), ClientID: "app"}, nil},
	} {
		want, _ := principalOf(c.info, c.actx)
		if n := testing.AllocsPerRun(100, func() {
			if !principalMatches(want, c.info, c.actx) {
				t.Fatal("no match")
			}
		}); n != 0 && !raceEnabled {
			t.Errorf("principal %q: %v allocations", want, n)
		}
	}
}
