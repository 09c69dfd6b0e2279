package pmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refusalHeaders are the response headers a refusal is recorded with.
var refusalHeaders = []string{"Allow", "Content-Type", "Cache-Control", "WWW-Authenticate", "Retry-After"}

// refusalLine is the golden line of one refusal: status, the headers of
// refusalHeaders (every value, in order) and the exact body.
func refusalLine(t *testing.T, name string, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-34s status=%d", name, resp.StatusCode)
	for _, k := range refusalHeaders {
		if vs := resp.Header.Values(k); len(vs) > 0 {
			fmt.Fprintf(&sb, " %s=%q", k, strings.Join(vs, " | "))
		}
	}
	fmt.Fprintf(&sb, " body=%q", b)
	return sb.String()
}

// fakeSessionStore is a SessionStore whose AdoptSession and SaveSession
// answer with the errors set (no session is ever stored).
type fakeSessionStore struct {
	adoptErr error
	saveErr  error
	adopt    bool // AdoptSession finds every id (a legacy handshake)
}

func (f *fakeSessionStore) NewSessionID() string { return "4242424242424242" }
func (f *fakeSessionStore) SaveSession(context.Context, SessionRecord) error {
	return f.saveErr
}
func (f *fakeSessionStore) AdoptSession(_ context.Context, id string) (SessionRecord, error) {
	if f.adopt {
		return SessionRecord{ID: id, InitParams: []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}, nil
	}
	return SessionRecord{}, f.adoptErr
}
func (f *fakeSessionStore) DeleteSession(context.Context, string) error { return nil }

// TestHTTPRefusals records every refusal the Streamable HTTP handler can
// write (issue 19, step T3): one raw request each, with the status, the
// Allow, Content-Type, Cache-Control, WWW-Authenticate and Retry-After
// headers, and the exact body, so the refusal table of steps H1/H2 can
// prove it writes the same bytes.
func TestHTTPRefusals(t *testing.T) {
	var lines []string
	add := func(name string, resp *http.Response) { lines = append(lines, refusalLine(t, name, resp)) }
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	const toolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	accept := func(kv ...string) http.Header { return hdr(append([]string{"Accept", acceptBoth}, kv...)...) }

	e := newHTTPEnv(t, newTestServerT(t), nil)
	sid := e.initSession(nil)
	// legacy is a legacy request's headers, with kv set over them.
	legacy := func(kv ...string) http.Header {
		h := accept("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}

	// ServeHTTP, before any body is read.
	add("host not allowed", e.post(ping, accept("Host", "evil.example")))
	add("origin not allowed", e.post(ping, accept("Origin", "https://evil.example")))
	add("method PUT", e.do(nil, http.MethodPut, ping, accept()))
	add("method PATCH no body", e.do(nil, http.MethodPatch, nil, accept()))
	add("GET with modern version", e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "MCP-Protocol-Version", Version20260728)))
	add("DELETE with modern version", e.do(nil, http.MethodDelete, nil, hdr("MCP-Protocol-Version", Version20260728, "Mcp-Session-Id", sid)))
	// servePost: media type, body, JSON-RPC framing.
	add("POST text/plain", e.post(ping, accept("Content-Type", "text/plain")))
	add("POST without Content-Type", e.post(ping, http.Header{"Accept": {acceptBoth}, "Content-Type": {}}))
	for _, c := range []struct{ name, body string }{
		{"body empty", ""},
		{"body not JSON", "{"},
		{"body JSON string", `"x"`},
		{"body empty batch", `[]`},
		{"body batch", `[` + ping + `]`},
		{"body jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`},
		{"body no method no result", `{"jsonrpc":"2.0","id":1}`},
		{"body malformed response", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`},
		{"body too deep", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300) + `}`},
	} {
		add(c.name, e.post(c.body, accept()))
	}
	add("response with modern version", e.post(`{"jsonrpc":"2.0","id":1,"result":{}}`, accept("MCP-Protocol-Version", Version20260728)))
	// Legacy sessions.
	add("legacy no session", e.post(toolsList, accept()))
	add("legacy unknown session", e.post(toolsList, accept("Mcp-Session-Id", "no-such-session")))
	add("legacy repeated version", e.post(toolsList, func() http.Header {
		h := legacy()
		h.Add("MCP-Protocol-Version", Version20251125)
		return h
	}()))
	add("legacy unsupported version", e.post(toolsList, legacy("MCP-Protocol-Version", "1999-01-01")))
	add("legacy not acceptable", e.post(toolsList, legacy("Accept", "text/plain")))
	add("initialize repeated version", e.post(initBody, func() http.Header {
		h := accept("MCP-Protocol-Version", Version20251125)
		h.Add("MCP-Protocol-Version", Version20251125)
		return h
	}()))
	add("GET no session", e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream")))
	add("GET unknown session", e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", "no-such-session")))
	add("GET not acceptable", e.do(nil, http.MethodGet, nil, hdr("Accept", "application/json", "Mcp-Session-Id", sid)))
	add("GET malformed Last-Event-ID", e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid, "Last-Event-ID", "garbage")))
	add("GET nothing to resume", e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid, "Last-Event-ID", "999-5")))
	add("DELETE no session", e.do(nil, http.MethodDelete, nil, nil))
	add("DELETE unknown session", e.do(nil, http.MethodDelete, nil, hdr("Mcp-Session-Id", "no-such-session")))
	// Modern requests.
	add("modern header mismatch", e.post(modernBody(1, MethodToolsList, nil, nil), modernHeaders(MethodPromptsList, "")))
	add("modern not acceptable", e.post(modernBody(1, MethodToolsList, nil, nil), modernHeaders(MethodToolsList, "", "Accept", "text/plain")))
	add("modern unknown method", e.post(modernBody(1, "no/such-method", nil, nil), modernHeaders("no/such-method", "")))

	refuseLimits(t, add, ping, initBody)
	refuseAuth(t, add, toolsList, initBody)
	refuseInFlight(t, add, initBody)
	refuseReplicas(t, add, toolsList, initBody)

	// Shutting down: every request after Close.
	closed := newHTTPEnv(t, newTestServerT(t), nil)
	closed.h.Close()
	add("shutting down", closed.post(ping, accept()))

	checkGolden(t, "http_refusals.golden", lines)
}

// refuseLimits: body size and read timeout, sessions, listen streams.
func refuseLimits(t *testing.T, add func(string, *http.Response), ping, initBody string) {
	small := newHTTPEnv(t, newTestServerT(t), &StreamableHTTPOptions{MaxBodyBytes: 64, BodyReadTimeout: 50 * time.Millisecond})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 100) + `"}}`
	add("body over MaxBodyBytes (length)", small.post(big, hdr("Accept", acceptBoth)))
	// Without a declared length the cap is met while reading.
	add("body over MaxBodyBytes (chunked)", postStream(t, small, io.MultiReader(strings.NewReader(big))))
	// A body that stops arriving: BodyReadTimeout.
	pr, pw := io.Pipe()
	go func() { _, _ = io.WriteString(pw, `{"jsonrpc":`) }()
	add("body read timeout", postStream(t, small, pr))
	_ = pw.Close()

	few := newHTTPEnv(t, newTestServerT(t), &StreamableHTTPOptions{MaxSessions: 1, MaxListenStreams: 1})
	few.initSession(nil)
	add("too many sessions", few.post(initBody, hdr("Accept", acceptBoth)))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := few.do(ctx, http.MethodPost, modernBody(1, MethodSubscriptionsListen, nil, nil), modernHeaders(MethodSubscriptionsListen, ""))
	if _, _, ok := newSSEReader(t, listen.Body).nextMessage(); !ok {
		t.Fatal("listen stream: no acknowledgement")
	}
	add("too many listen streams", few.post(modernBody(2, MethodSubscriptionsListen, nil, nil), modernHeaders(MethodSubscriptionsListen, "")))
	cancel()
	listen.Body.Close()
}

// postStream POSTs a body of unknown length (sent chunked), which
// httpEnv.do cannot.
func postStream(t *testing.T, e *httpEnv, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.ts.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr("Accept", acceptBoth, "Content-Type", "application/json")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// refuseAuth: the Authenticate hook's refusals and the scope check.
func refuseAuth(t *testing.T, add func(string, *http.Response), toolsList, initBody string) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"auth plain error", errors.New("bad token")},
		{"auth AuthError 401 challenge", &AuthError{Status: http.StatusUnauthorized, Challenges: []string{`Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource"`, `DPoP algs="ES256"`}}},
		{"auth AuthError 403", &AuthError{Status: http.StatusForbidden, Challenges: []string{`Bearer error="insufficient_scope", scope="a b"`}}},
		{"auth AuthError no status", &AuthError{Err: errors.New("expired")}},
	} {
		e := newHTTPEnv(t, newTestServerT(t), &StreamableHTTPOptions{Authenticate: func(*http.Request) (*AuthInfo, *AuthContext, error) { return nil, nil, c.err }})
		add(c.name, e.post(toolsList, hdr("Accept", acceptBoth)))
	}
	noPrincipal := newHTTPEnv(t, newTestServerT(t), &StreamableHTTPOptions{Authenticate: func(*http.Request) (*AuthInfo, *AuthContext, error) { return &AuthInfo{}, nil, nil }})
	add("initialize without principal", noPrincipal.post(initBody, hdr("Accept", acceptBoth)))

	srv, _ := scopedServer(t, ServerOptions{})
	scoped := newHTTPEnv(t, srv, &StreamableHTTPOptions{Authenticate: scopesFromHeader})
	add("scope missing (modern)", scoped.post(modernBody(1, MethodToolsCall, map[string]any{"name": "admin"}, nil), modernHeaders(MethodToolsCall, "admin", "X-Scopes", "mcp:write")))
	add("scope missing (legacy)", scoped.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin"}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", scoped.initSession(nil))))
}

// refuseInFlight: a session's request slots and duplicate ids, with a
// tool that blocks until released.
func refuseInFlight(t *testing.T, add func(string, *http.Response), initBody string) {
	srv, err := NewServer(ServerOptions{MaxConcurrentRequests: 2})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}, 2), make(chan struct{})
	if err := AddTool(srv, &Tool{Name: "block"}, func(ctx context.Context, _ *RequestHandlerExtra, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	h := hdr("Accept", acceptBoth, "Mcp-Session-Id", sid)
	call := func(id int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"block"}}`
	}
	var open []*http.Response
	defer func() {
		close(release)
		for _, r := range open {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}()
	open = append(open, e.post(call(1), h))
	recvSignal(t, started, "the first blocking call")
	add("duplicate request id in flight", e.post(call(1), h))
	open = append(open, e.post(call(2), h))
	recvSignal(t, started, "the second blocking call")
	add("too many requests in flight", e.post(call(3), h))
}

// refuseReplicas: a SessionStore that cannot adopt or save.
func refuseReplicas(t *testing.T, add func(string, *http.Response), toolsList, initBody string) {
	for _, c := range []struct {
		name  string
		store *fakeSessionStore
		body  string
		sid   string
	}{
		{"replica owns session", &fakeSessionStore{adoptErr: ErrSessionOwned}, toolsList, "1234567890abcdef"},
		{"session store down (adopt)", &fakeSessionStore{adoptErr: errors.New("redis: connection refused")}, toolsList, "1234567890abcdef"},
		{"session store down (save)", &fakeSessionStore{adoptErr: ErrNoSession, saveErr: errors.New("redis: connection refused")}, initBody, ""},
		{"too many sessions (adopting)", &fakeSessionStore{adopt: true}, toolsList, "1234567890abcdef"},
	} {
		opts := StreamableHTTPOptions{SessionStore: c.store}
		if c.store.adopt {
			opts.MaxSessions = 1 // taken by the session opened below
		}
		e := newHTTPEnv(t, newTestServerT(t), &opts)
		if c.store.adopt {
			e.initSession(nil)
		}
		h := hdr("Accept", "application/json")
		if c.sid != "" {
			h.Set("Mcp-Session-Id", c.sid)
		}
		add(c.name, e.post(c.body, h))
	}
}
