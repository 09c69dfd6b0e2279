package pmcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// scopedServer registers one scoped entry of each kind (and an unscoped
// tool); runs counts the handler calls, which a refused request must not
// make.
func scopedServer(t *testing.T, opts ServerOptions) (*Server, *atomic.Int64) {
	t.Helper()
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	runs := new(atomic.Int64)
	type noArgs struct{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(srv, &Tool{Name: "admin", Scopes: []string{"mcp:admin", "mcp:write", "mcp:admin"}}, func(context.Context, *RequestHandlerExtra, noArgs) (string, error) {
		runs.Add(1)
		return "done", nil
	}))
	must(AddTool(srv, &Tool{Name: "open"}, func(context.Context, *RequestHandlerExtra, noArgs) (string, error) {
		runs.Add(1)
		return "open", nil
	}))
	must(srv.AddPrompt(&Prompt{Name: "secret-prompt", Scopes: []string{"mcp:prompts"}}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
		runs.Add(1)
		return &GetPromptResult{Messages: []*PromptMessage{{Role: "user", Content: Text("hi")}}}, nil
	}))
	must(srv.AddResource(&Resource{URI: "file:///secret", Name: "secret", Scopes: []string{"mcp:files"}}, func(_ context.Context, _ *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		runs.Add(1)
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "s"}}}, nil
	}))
	must(srv.AddResourceTemplate(&ResourceTemplate{URITemplate: "db:///{table}", Name: "tables", Scopes: []string{"mcp:db"}}, func(_ context.Context, _ *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		runs.Add(1)
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: r.Vars["table"]}}}, nil
	}))
	return srv, runs
}

// scopedOps are the operations of scopedServer and the scopes each needs.
var scopedOps = []struct {
	method string
	params map[string]any
	name   string // Mcp-Name
	scopes string
}{
	{MethodToolsCall, map[string]any{"name": "admin", "arguments": map[string]any{}}, "admin", "mcp:admin mcp:write"},
	{MethodPromptsGet, map[string]any{"name": "secret-prompt"}, "secret-prompt", "mcp:prompts"},
	{MethodResourcesRead, map[string]any{"uri": "file:///secret"}, "file:///secret", "mcp:files"},
	{MethodResourcesRead, map[string]any{"uri": "db:///users"}, "db:///users", "mcp:db"},
}

// scopesFromHeader is a test Authenticate hook: the caller "u" holds the
// scopes listed in X-Scopes.
func scopesFromHeader(r *http.Request) (*AuthInfo, *AuthContext, error) {
	sc := strings.Fields(r.Header.Get("X-Scopes"))
	return &AuthInfo{Token: "t", Scopes: sc}, &AuthContext{Subject: "u", Scopes: sc}, nil
}

// Over Streamable HTTP, a call lacking a scope of its tool, prompt or
// resource gets 403 with the step-up challenge naming every scope the
// operation needs, before any handler runs, in both eras; with the
// scopes it succeeds. Scoped entries stay listed.
func TestScopesHTTPStepUp(t *testing.T) {
	srv, runs := scopedServer(t, ServerOptions{})
	var hookScopes atomic.Value
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{
		Authenticate: scopesFromHeader,
		InsufficientScope: func(actx *AuthContext, required ...string) error {
			hookScopes.Store(strings.Join(required, " ") + "|" + strings.Join(actx.Scopes, " "))
			return &AuthError{Status: http.StatusForbidden, Challenges: []string{`Bearer error="insufficient_scope", scope="` + strings.Join(required, " ") + `", resource_metadata="https://rs.example/.well-known/oauth-protected-resource"`}}
		},
	})
	legacy := func(granted string) http.Header {
		h := hdr("X-Scopes", granted)
		sid := e.initSession(h.Clone())
		return hdr("Accept", acceptBoth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25", "X-Scopes", granted)
	}
	for _, op := range scopedOps {
		for _, era := range []string{"legacy", "modern"} {
			t.Run(era+"/"+op.method+"/"+op.name, func(t *testing.T) {
				send := func(granted string) *http.Response {
					if era == "modern" {
						return e.post(modernBody(7, op.method, op.params, nil), modernHeaders(op.method, op.name, "X-Scopes", granted))
					}
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": op.method, "params": op.params})
					h := legacy(granted)
					h.Set("Accept", "application/json, text/event-stream")
					return e.post(string(b), h)
				}
				before := runs.Load()
				// Some of the scopes are not enough.
				partial := strings.Join(append(strings.Fields(op.scopes)[1:], "unrelated"), " ")
				resp := send(partial)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					t.Fatalf("status %d, want 403", resp.StatusCode)
				}
				want := `Bearer error="insufficient_scope", scope="` + op.scopes + `", resource_metadata="https://rs.example/.well-known/oauth-protected-resource"`
				if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != want {
					t.Fatalf("WWW-Authenticate %q, want %q", got, want)
				}
				if got := hookScopes.Load(); got != op.scopes+"|"+partial {
					t.Fatalf("hook called with %q", got)
				}
				if runs.Load() != before {
					t.Fatal("the handler ran for a refused request")
				}
				// Step-up: every scope named in the challenge.
				resp = send(op.scopes)
				body := readAny(t, resp)
				if resp.StatusCode != 200 || body.Error != nil || runs.Load() != before+1 {
					t.Fatalf("with the scopes: %d %+v runs %d", resp.StatusCode, body.Error, runs.Load()-before)
				}
			})
		}
	}
	// Unscoped tools and the lists need no scope; scoped entries are listed.
	resp := e.post(modernBody(1, MethodToolsList, nil, nil), modernHeaders(MethodToolsList, ""))
	r := readAny(t, resp)
	if !strings.Contains(string(r.Result), `"admin"`) || !strings.Contains(string(r.Result), `"open"`) || strings.Contains(string(r.Result), "mcp:admin") {
		t.Fatalf("tools/list %s", r.Result)
	}
	resp = e.post(modernBody(2, MethodToolsCall, map[string]any{"name": "open"}, nil), modernHeaders(MethodToolsCall, "open"))
	if r := readAny(t, resp); r.Error != nil || resp.StatusCode != 200 {
		t.Fatalf("open tool: %d %+v", resp.StatusCode, r.Error)
	}
}

// readAny reads a JSON or single-message SSE response.
func readAny(t *testing.T, resp *http.Response) *rpcReply {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		m, _, ok := newSSEReader(t, resp.Body).nextMessage()
		if !ok {
			t.Fatal("no message in the SSE response")
		}
		return m
	}
	return readJSON(t, resp)
}

// Without an InsufficientScope hook, and without an Authenticate hook at
// all, a scoped operation still gets 403 insufficient_scope (fail closed).
func TestScopesHTTPDefaultChallenge(t *testing.T) {
	for name, opts := range map[string]*StreamableHTTPOptions{
		"no hook":      {Authenticate: scopesFromHeader},
		"no auth":      {},
		"hook not 403": {Authenticate: scopesFromHeader, InsufficientScope: func(*AuthContext, ...string) error { return errors.New("x") }},
	} {
		t.Run(name, func(t *testing.T) {
			srv, runs := scopedServer(t, ServerOptions{})
			e := newHTTPEnv(t, srv, opts)
			resp := e.post(modernBody(1, MethodToolsCall, map[string]any{"name": "admin"}, nil), modernHeaders(MethodToolsCall, "admin", "X-Scopes", "mcp:write"))
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || runs.Load() != 0 {
				t.Fatalf("status %d runs %d", resp.StatusCode, runs.Load())
			}
			if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != `Bearer error="insufficient_scope", scope="mcp:admin mcp:write"` {
				t.Fatalf("WWW-Authenticate %q", got)
			}
		})
	}
}

// scopedStreamClient is a client of scopedServer over a stream transport
// whose middleware sets the identity: the caller holds the scopes stored
// in granted (a []string).
func scopedStreamClient(t *testing.T) (*testClient, *atomic.Value, *atomic.Int64) {
	t.Helper()
	granted := new(atomic.Value)
	granted.Store([]string(nil))
	srv, runs := scopedServer(t, ServerOptions{Middleware: []Middleware{func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (Result, error) {
			req.Extra.AuthContext = &AuthContext{Subject: "env-user", Scopes: granted.Load().([]string)}
			return next(ctx, req)
		}
	}}})
	c := startServer(t, srv, nil)
	c.initialize(nil)
	return c, granted, runs
}

// Over a stream transport (stdio, in-memory) the same check runs after
// the middleware that set the identity, and a refusal is the JSON-RPC
// error scopeErrorCode naming every scope, in both eras.
func TestScopesStreamTransport(t *testing.T) {
	c, granted, runs := scopedStreamClient(t)
	for _, op := range scopedOps {
		for _, era := range []string{"legacy", "modern"} {
			params := map[string]any{}
			for k, v := range op.params {
				params[k] = v
			}
			if era == "modern" {
				params["_meta"] = map[string]any{MetaProtocolVersion: Version20260728, MetaClientCapabilities: map[string]any{}}
			}
			granted.Store(strings.Fields(op.scopes)[1:])
			e := c.callErr(op.method, params)
			var data map[string]string
			if e.Code != scopeErrorCode || json.Unmarshal(e.Data, &data) != nil || data["error"] != "insufficient_scope" || data["scope"] != op.scopes {
				t.Fatalf("%s %s %s: %d %q %s", era, op.method, op.name, e.Code, e.Message, e.Data)
			}
			if runs.Load() != 0 {
				t.Fatalf("%s %s: the handler ran", era, op.method)
			}
			granted.Store(strings.Fields(op.scopes))
			if _, err := c.call(op.method, params); err != nil {
				t.Fatalf("%s %s with scopes: %v", era, op.method, err)
			}
			runs.Store(0)
		}
	}
}

func TestScopesRegistrationChecked(t *testing.T) {
	srv := newTestServerT(t)
	type noArgs struct{}
	h := func(context.Context, *RequestHandlerExtra, noArgs) (string, error) { return "", nil }
	for _, bad := range [][]string{{""}, {"a b"}, {`q"uote`}, {"back\\slash"}, {"caf\u00e9"}, {"ok", "offline_access"}} {
		if err := AddTool(srv, &Tool{Name: "t", Scopes: bad}, h); !errors.Is(err, ErrInvalidRegistration) {
			t.Errorf("tool scopes %q: %v", bad, err)
		}
		if err := srv.AddPrompt(&Prompt{Name: "p", Scopes: bad}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
			return nil, nil
		}); !errors.Is(err, ErrInvalidRegistration) {
			t.Errorf("prompt scopes %q: %v", bad, err)
		}
		if err := srv.AddResource(&Resource{URI: "x:y", Name: "r", Scopes: bad}, func(context.Context, *RequestHandlerExtra, *ResourceRequest) (*ReadResourceResult, error) {
			return nil, nil
		}); !errors.Is(err, ErrInvalidRegistration) {
			t.Errorf("resource scopes %q: %v", bad, err)
		}
	}
	if srv.scoped.Load() {
		t.Fatal("refused registrations marked the server scoped")
	}
	// The registration keeps its own copy: changing the caller's slice
	// afterwards does not change what is enforced.
	sc := []string{"mcp:a"}
	tool := &Tool{Name: "copy", InputSchema: jsontext.Value(`{"type":"object"}`), Scopes: sc}
	if err := srv.AddRawTool(tool, func(context.Context, *RequestHandlerExtra, *CallToolParams) (*CallToolResult, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	sc[0] = "mcp:b"
	if got := srv.requiredScopes(methodOf(MethodToolsCall), "copy"); len(got) != 1 || got[0] != "mcp:a" {
		t.Fatalf("required %q", got)
	}
	// Scopes never reach the wire.
	b, err := json.Marshal(tool)
	if err != nil || strings.Contains(string(b), "mcp:") {
		t.Fatalf("marshalled tool %s %v", b, err)
	}
	var e *jsonrpc.Error
	if !errors.As(scopeRefusal([]string{"a"}), &e) || e.Code != jsonrpc.CodeInvalidRequest {
		t.Fatal("scopeRefusal code")
	}
}

// When several templates match a URI, the transport's scope check and the
// read must pick the same one: the first in the order of the templates.
func TestScopesOverlappingTemplatesDeterministic(t *testing.T) {
	srv := newTestServerT(t)
	h := func(_ context.Context, _ *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}}, nil
	}
	if err := srv.AddResourceTemplate(&ResourceTemplate{URITemplate: "a:///{x}", Name: "x", Scopes: []string{"s1"}}, h); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddResourceTemplate(&ResourceTemplate{URITemplate: "a:///{y}", Name: "y"}, h); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if got := srv.requiredScopes(methodOf(MethodResourcesRead), "a:///q"); len(got) != 1 || got[0] != "s1" {
			t.Fatalf("lookup %d picked a template with scopes %q", i, got)
		}
	}
}
