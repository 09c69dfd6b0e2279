package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// jwtServer serves srv on loopback at /mcp behind an Authenticator with
// the real JWT verifier of as (Options.Scopes mcp:tools), per-operation
// scopes wired, PRM mounted. It returns the resource URI, the server and
// a mint function for tokens of that resource.
func jwtServer(t *testing.T, as *testAS, srv *pmcp.Server) (resource string, ts *httptest.Server, authn *Authenticator, mint func(sub, scope string) string) {
	t.Helper()
	mux := http.NewServeMux()
	ts = httptest.NewServer(mux)
	resource = ts.URL + "/mcp"
	authn, err := NewAuthenticator(Options{Verifier: as.newVerifier(t, func(o *JWTOptions) { o.Audience = resource }), Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MountProtectedResourceMetadata(mux, &ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{testIssuer}, ScopesSupported: []string{"mcp:tools", "mcp:deploy"},
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate, InsufficientScope: authn.InsufficientScope})
	mux.Handle("/mcp", h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	mint = func(sub, scope string) string {
		c := claims()
		c["aud"], c["sub"], c["scope"] = resource, sub, scope
		c["jti"] = fmt.Sprint(time.Now().UnixNano())
		return as.sign("ec1", c, nil)
	}
	return resource, ts, authn, mint
}

// A tool registered with Scopes, behind the real JWT verifier: the pmcp
// client sees it listed, calling it with a token lacking its scope gets
// 403 with the step-up challenge naming every scope needed (the
// Authenticator's and the tool's) and the resource metadata, the handler
// does not run; a token with those scopes succeeds. Both eras.
func TestEndToEndToolScopes(t *testing.T) {
	as := newTestAS(t)
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "scopes", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	type noArgs struct{}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "deploy", Scopes: []string{"mcp:deploy"}}, func(_ context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
		runs.Add(1)
		return "deployed by " + extra.AuthContext.Subject, nil
	}); err != nil {
		t.Fatal(err)
	}
	resource, _, authn, mint := jwtServer(t, as, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(t *testing.T, era pmcp.Era, tok string) *pmcp.ClientSession {
		t.Helper()
		s, err := pmcp.NewClient(pmcp.ClientOptions{Name: "scopes", Era: era}).ConnectHTTP(ctx, resource, pmcp.HTTPClientOptions{
			Header: http.Header{"Authorization": {"Bearer " + tok}}, NoStandaloneStream: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(fmt.Sprint(era), func(t *testing.T) {
			s := connect(t, era, mint("alice", "mcp:tools"))
			list, err := s.ListTools(ctx, "")
			if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "deploy" {
				t.Fatalf("tools/list: %+v %v", list, err)
			}
			_, err = s.CallTool(ctx, "deploy", map[string]any{})
			var se *pmcp.HTTPStatusError
			if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
				t.Fatalf("call without the scope: %v", err)
			}
			c := parseChallenge(t, se.WWWAuthenticate)
			if c.scheme != "Bearer" || c.params["error"] != ErrorInsufficientScope || c.params["scope"] != "mcp:tools mcp:deploy" ||
				c.params["resource_metadata"] != authn.ResourceMetadataURL() {
				t.Fatalf("challenge %+v", c)
			}
			if runs.Load() != 0 {
				t.Fatal("the handler ran for a refused call")
			}
			// Step-up: a token with every scope of the challenge.
			s2 := connect(t, era, mint("alice", c.params["scope"]))
			res, err := s2.CallTool(ctx, "deploy", map[string]any{})
			if err != nil || res.Content[0].(*pmcp.TextContent).Text != "deployed by alice" {
				t.Fatalf("after step-up: %+v %v", res, err)
			}
			runs.Store(0)
		})
	}
}

// Item 4 of the authorization issue with the real JWT verifier (the root
// package's tests use an Authenticate hook): a legacy session opened by
// alice's JWT answers bob's JWT 404; a requestState sealed for alice is
// refused to bob and resumed by alice; the access log names the subject
// and never holds the token.
func TestEndToEndIdentityBindingRealJWT(t *testing.T) {
	as := newTestAS(t)
	logs := &syncBuffer{}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "bind", Version: "1", Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	type cont struct {
		Who string `json:"who"`
	}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "confirm"}, func(_ context.Context, e *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		if c := e.MRTRContinuation(); c != nil {
			return "resumed " + string(c), nil
		}
		return "", e.RequireInput(map[string]*pmcp.InputRequest{"q": {Method: pmcp.MethodElicitationCreate, Params: &pmcp.ElicitParams{Message: "sure?"}}}, cont{Who: e.AuthContext.Subject})
	}); err != nil {
		t.Fatal(err)
	}
	resource, ts, _, mint := jwtServer(t, as, srv)
	alice, bob := mint("alice", "mcp:tools"), mint("bob", "mcp:tools")

	// Legacy session binding.
	resp := rawPost(t, ts, resource, initializeBody, http.Header{"Authorization": {"Bearer " + alice}})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, sid)
	}
	ping := func(tok string) int {
		return rawPost(t, ts, resource, pingBody, http.Header{"Authorization": {"Bearer " + tok}, "Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}).StatusCode
	}
	if got := ping(bob); got != http.StatusNotFound {
		t.Fatalf("bob's JWT on alice's session: %d, want 404", got)
	}
	// A fresh token of alice's (another jti) is still alice.
	if got := ping(mint("alice", "mcp:tools")); got != http.StatusOK {
		t.Fatalf("alice's new token on her session: %d", got)
	}

	// Modern requestState binding.
	call := func(tok string, params map[string]any) map[string]any {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params})
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(string(b)))
		req.Header = http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}, "Accept": {"application/json"},
			"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"confirm"}}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		return m
	}
	first := call(alice, map[string]any{"name": "confirm"})
	result, _ := first["result"].(map[string]any)
	state, _ := result["requestState"].(string)
	if result["resultType"] != "input_required" || state == "" {
		t.Fatalf("first round: %v", first)
	}
	retry := func() map[string]any {
		return map[string]any{"name": "confirm", "requestState": state, "inputResponses": map[string]any{"q": map[string]any{"action": "accept"}}}
	}
	stolen := call(bob, retry())
	if e, _ := stolen["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("bob replayed alice's requestState: %v", stolen)
	}
	own := call(mint("alice", "mcp:tools"), retry())
	if r, _ := own["result"].(map[string]any); r == nil || !strings.Contains(fmt.Sprint(r["content"]), `resumed {"who":"alice"}`) {
		t.Fatalf("alice could not resume: %v", own)
	}

	// The access log names the subject, never the token.
	out := logs.String()
	if !strings.Contains(out, "principal=alice") || !strings.Contains(out, "principal=bob") {
		t.Fatalf("access log without the subjects:\n%s", out)
	}
	for _, tok := range []string{alice, bob} {
		if strings.Contains(out, tok) || strings.Contains(out, strings.Split(tok, ".")[2]) {
			t.Fatalf("the log contains a token:\n%s", out)
		}
	}
}
