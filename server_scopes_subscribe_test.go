package pmcp

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Subscribing to a scoped resource needs the resource's scopes, like
// reading it: resources/subscribe (legacy) and a subscriptions/listen
// filter naming it (modern) are refused with the scope error over a
// stream transport. Unsubscribing needs no scope: it only stops what the
// caller gets.
func TestScopesSubscribeStreamTransport(t *testing.T) {
	c, granted, _ := scopedStreamClient(t)
	wantRefusal := func(what string, e *jsonrpc.Error, scopes string) {
		t.Helper()
		var data map[string]string
		if e == nil || e.Code != scopeErrorCode || json.Unmarshal(e.Data, &data) != nil || data["error"] != "insufficient_scope" || data["scope"] != scopes {
			t.Fatalf("%s: %+v, want the scope refusal naming %q", what, e, scopes)
		}
	}
	for uri, scopes := range map[string]string{"file:///secret": "mcp:files", "db:///users": "mcp:db"} {
		granted.Store([]string{"unrelated"})
		wantRefusal("subscribe "+uri, c.callErr(MethodResourcesSubscribe, map[string]any{"uri": uri}), scopes)
		if _, err := c.call(MethodResourcesUnsubscribe, map[string]any{"uri": uri}); err != nil {
			t.Fatalf("unsubscribe %s without scope: %v", uri, err)
		}
		granted.Store(strings.Fields(scopes))
		if _, err := c.call(MethodResourcesSubscribe, map[string]any{"uri": uri}); err != nil {
			t.Fatalf("subscribe %s with %s: %v", uri, scopes, err)
		}
	}
	granted.Store([]string{"mcp:files"})
	e := c.callErr(MethodSubscriptionsListen, map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": []string{"file:///secret", "db:///users", "file:///unscoped"}},
		"_meta":         map[string]any{MetaProtocolVersion: Version20260728, MetaClientCapabilities: map[string]any{}},
	})
	wantRefusal("listen", e, "mcp:files mcp:db") // every scope the filter needs, like the HTTP challenge
}

// Over Streamable HTTP the same subscriptions get the 403 step-up
// (resources/subscribe in the legacy era, subscriptions/listen in the
// modern one); unsubscribing needs no scope.
func TestScopesHTTPSubscribe(t *testing.T) {
	srv, runs := scopedServer(t, ServerOptions{})
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{Authenticate: scopesFromHeader})
	sid := e.initSession(hdr("X-Scopes", "unrelated"))
	legacy := hdr("Accept", acceptBoth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25", "X-Scopes", "unrelated")
	resp := e.post(`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"file:///secret"}}`, legacy)
	wantScopeStepUp(t, "legacy subscribe", resp, "7", "mcp:files")
	resp = e.post(`{"jsonrpc":"2.0","id":8,"method":"resources/unsubscribe","params":{"uri":"db:///users"}}`, legacy)
	if r := readAny(t, resp); resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("unsubscribe without scope: %d %+v", resp.StatusCode, r.Error)
	}
	listen := modernBody(9, MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"file:///secret", "db:///users"}}}, nil)
	resp = e.post(listen, modernHeaders(MethodSubscriptionsListen, "", "X-Scopes", "mcp:files"))
	wantScopeStepUp(t, "modern listen", resp, "9", "mcp:files mcp:db")
	if runs.Load() != 0 {
		t.Fatal("a handler ran for a refused request")
	}
	// A method the era lacks is answered as such, scoped target or not.
	resp = e.post(modernBody(11, MethodResourcesSubscribe, map[string]any{"uri": "file:///secret"}, nil), modernHeaders(MethodResourcesSubscribe, "", "X-Scopes", "unrelated"))
	if r := readAny(t, resp); resp.StatusCode != http.StatusNotFound || r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("modern resources/subscribe: %d %+v, want 404/-32601", resp.StatusCode, r.Error)
	}
	resp = e.post(`{"jsonrpc":"2.0","id":12,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["file:///secret"]}}}`, legacy)
	if r := readAny(t, resp); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("legacy subscriptions/listen: %d %+v, want -32601", resp.StatusCode, r.Error)
	}
	// With the scope, the subscription is taken.
	legacy.Set("X-Scopes", "mcp:files")
	resp = e.post(`{"jsonrpc":"2.0","id":10,"method":"resources/subscribe","params":{"uri":"file:///secret"}}`, legacy)
	if r := readAny(t, resp); resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("subscribe with the scope: %d %+v", resp.StatusCode, r.Error)
	}
}

// wantScopeStepUp checks the one shape of an HTTP scope refusal: 403, the
// default step-up challenge, and as body the JSON-RPC error a stream
// transport answers (same id, code, message, data).
func wantScopeStepUp(t *testing.T, what string, resp *http.Response, id, scopes string) {
	t.Helper()
	if resp.StatusCode != http.StatusForbidden {
		resp.Body.Close()
		t.Fatalf("%s: status %d, want 403", what, resp.StatusCode)
	}
	if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != `Bearer error="insufficient_scope", scope="`+scopes+`"` {
		t.Fatalf("%s: WWW-Authenticate %q", what, got)
	}
	r := readJSON(t, resp)
	want := scopeRefusal(strings.Fields(scopes))
	if r.Error == nil || string(r.ID) != id || r.Error.Code != want.Code || r.Error.Message != want.Message || string(r.Error.Data) != string(want.Data) {
		t.Fatalf("%s: body id %s error %+v, want the stream transport's %+v", what, r.ID, r.Error, want)
	}
}

// Every scope refusal over HTTP has one shape in both eras: the
// transport's header and session checks first (400/-32020 for a missing
// Mcp-Name), then 403 with the step-up challenge and the stream
// transport's JSON-RPC error as body, logged as an authorization refusal
// (without the credential).
func TestScopesHTTPRefusalShape(t *testing.T) {
	var logBuf bytes.Buffer
	logMu := make(chan struct{}, 1)
	logMu <- struct{}{}
	srv, runs := scopedServer(t, ServerOptions{Logger: slog.New(slog.NewTextHandler(lockedWriter{&logBuf, logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{Authenticate: scopesFromHeader})
	// A scoped call without its Mcp-Name header is a header error first.
	resp := e.post(modernBody(10, MethodToolsCall, map[string]any{"name": "admin"}, nil), modernHeaders(MethodToolsCall, "", "X-Scopes", "mcp:write"))
	if r := readJSON(t, resp); resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32020 {
		t.Fatalf("scoped call without Mcp-Name: %d %+v, want 400/-32020", resp.StatusCode, r.Error)
	}
	resp = e.post(modernBody(11, MethodToolsCall, map[string]any{"name": "admin"}, nil), modernHeaders(MethodToolsCall, "admin", "X-Scopes", "mcp:write", "Authorization", "Bearer t0k3n-for-tests"))
	wantScopeStepUp(t, "modern tools/call", resp, "11", "mcp:admin mcp:write")
	// Legacy: a scoped request without a session is a session error first.
	body := `{"jsonrpc":"2.0","id":12,"method":"prompts/get","params":{"name":"secret-prompt"}}`
	resp = e.post(body, hdr("Accept", acceptBoth, "MCP-Protocol-Version", "2025-11-25", "X-Scopes", "unrelated"))
	if resp.Body.Close(); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("scoped legacy request without a session: %d, want 400", resp.StatusCode)
	}
	sid := e.initSession(hdr("X-Scopes", "unrelated"))
	resp = e.post(body, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25", "X-Scopes", "unrelated"))
	wantScopeStepUp(t, "legacy prompts/get", resp, "12", "mcp:prompts")
	if runs.Load() != 0 {
		t.Fatal("a handler ran for a refused request")
	}
	<-logMu
	logged := logBuf.String()
	logMu <- struct{}{}
	if n := strings.Count(logged, "reason=\"pmcp: insufficient scope\""); n != 2 || strings.Contains(logged, "t0k3n-for-tests") {
		t.Fatalf("auth-refusal log (%d scope refusals):\n%s", n, logged)
	}
}

// lockedWriter serialises writes to a buffer shared with the test.
type lockedWriter struct {
	b  *bytes.Buffer
	mu chan struct{}
}

func (w lockedWriter) Write(p []byte) (int, error) {
	<-w.mu
	defer func() { w.mu <- struct{}{} }()
	return w.b.Write(p)
}
