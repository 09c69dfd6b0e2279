package pmcp

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDenyResourcesLooksUnknown: a denied resource is absent from
// resources/list (a denied template from resources/templates/list), and
// reading or subscribing to it answers, byte for byte, what a URI nothing
// serves answers, in both eras over HTTP.
func TestDenyResourcesLooksUnknown(t *testing.T) {
	deny := func(_ context.Context, _ *Request, uri string) bool { return strings.HasPrefix(uri, "secret://") }
	denied := newTestServer(t, ServerOptions{Middleware: []Middleware{DenyResources(deny)}})
	absent := newTestServer(t, ServerOptions{})
	read := func(context.Context, *RequestHandlerExtra, *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: "x", Text: "leak"}}}, nil
	}
	for _, s := range []*Server{denied, absent} {
		if err := s.AddResource(&Resource{URI: "open://a", Name: "a"}, read); err != nil {
			t.Fatal(err)
		}
	}
	if err := denied.AddResource(&Resource{URI: "secret://b", Name: "b"}, read); err != nil {
		t.Fatal(err)
	}
	if err := denied.AddResourceTemplate(&ResourceTemplate{URITemplate: "secret://t/{id}", Name: "t"}, read); err != nil {
		t.Fatal(err)
	}
	opts := &StreamableHTTPOptions{JSONResponse: true}
	ed, ea := newHTTPEnv(t, denied, opts), newHTTPEnv(t, absent, opts)

	for _, m := range []struct{ method, uri string }{
		{MethodResourcesRead, "secret://b"}, {MethodResourcesRead, "secret://t/1"}, {MethodResourcesList, ""}, {MethodResourcesTemplatesList, ""},
	} {
		params := map[string]any{}
		if m.uri != "" {
			params["uri"] = m.uri
		}
		sd, bd := body(t, ed.post(modernBody(7, m.method, params, nil), modernHeaders(m.method, m.uri, "Accept", "application/json")))
		sa, ba := body(t, ea.post(modernBody(7, m.method, params, nil), modernHeaders(m.method, m.uri, "Accept", "application/json")))
		if sd != sa || !bytes.Equal(bd, ba) {
			t.Fatalf("modern %s %s: denied answered %d %s\nunknown answered %d %s", m.method, m.uri, sd, bd, sa, ba)
		}
		if bytes.Contains(bd, []byte("leak")) || bytes.Contains(bd, []byte("secret://")) && m.uri == "" {
			t.Fatalf("modern %s leaks: %s", m.method, bd)
		}
	}
	sidD, sidA := ed.initSession(nil), ea.initSession(nil)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"secret://b"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"secret://b"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/templates/list","params":{"extra":1}}`,
	} {
		sd, bd := body(t, ed.post(msg, hdr("Accept", "application/json", "Mcp-Session-Id", sidD, "MCP-Protocol-Version", Version20251125)))
		sa, ba := body(t, ea.post(msg, hdr("Accept", "application/json", "Mcp-Session-Id", sidA, "MCP-Protocol-Version", Version20251125)))
		if sd != sa || !bytes.Equal(bd, ba) {
			t.Fatalf("legacy %s: denied answered %d %s\nunknown answered %d %s", msg, sd, bd, sa, ba)
		}
	}
}

// TestRateLimitedError: a middleware's *RateLimitedError is sent as
// -32029 with data.retryAfterMs (rounded up) in both eras; a modern plain
// JSON reply is a 429 with Retry-After in whole seconds, rounded up.
func TestRateLimitedError(t *testing.T) {
	limit := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (Result, error) {
			if req.Method == MethodToolsCall {
				return nil, &RateLimitedError{RetryAfter: 1500*time.Millisecond + 10*time.Microsecond}
			}
			return next(ctx, req)
		}
	}
	e := newHTTPEnv(t, newTestServer(t, ServerOptions{Middleware: []Middleware{limit}}), &StreamableHTTPOptions{JSONResponse: true})
	const want = `{"jsonrpc":"2.0","id":7,"error":{"code":-32029,"message":"rate limited","data":{"retryAfterMs":1501}}}`
	resp := e.post(modernBody(7, MethodToolsCall, map[string]any{"name": "add"}, nil), modernHeaders(MethodToolsCall, "add", "Accept", "application/json"))
	st, b := body(t, resp)
	if st != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" || string(bytes.TrimSpace(b)) != want {
		t.Fatalf("modern: %d Retry-After %q %s", st, resp.Header.Get("Retry-After"), b)
	}
	sid := e.initSession(nil)
	resp = e.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125))
	st, b = body(t, resp)
	if st != http.StatusOK || string(bytes.TrimSpace(b)) != want {
		t.Fatalf("legacy: %d %s", st, b)
	}
}
