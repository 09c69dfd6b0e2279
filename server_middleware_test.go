package pmcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// ---- helpers: a pmcp Client against a Server over each real transport ----

var mwTransports = []string{TransportMemory, TransportStdio, TransportHTTP}

// connectOver serves srv over the named transport and connects c to it.
func connectOver(t *testing.T, transport string, srv *Server, c *Client) *ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if transport == TransportHTTP {
		h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
		ts := httptest.NewServer(h)
		s, err := c.ConnectHTTP(ctx, ts.URL, HTTPClientOptions{})
		if err != nil {
			_ = h.Close()
			ts.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = s.Close()
			_ = h.Close()
			ts.Close()
		})
		return s
	}
	var srvEnd, cliEnd jsonrpc.Stream
	if transport == TransportMemory {
		srvEnd, cliEnd = memory.NewPipe()
	} else {
		toSrvR, toSrvW := io.Pipe()
		toCliR, toCliW := io.Pipe()
		srvEnd = stdio.NewStream(toSrvR, toCliW, stdio.Options{})
		cliEnd = stdio.NewStream(toCliR, toSrvW, stdio.Options{})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(context.Background(), srvEnd)
	}()
	s, err := c.Connect(ctx, cliEnd)
	if err != nil {
		_ = srvEnd.Close()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		_ = srvEnd.Close()
		<-done
	})
	return s
}

// tenant is a typed value middleware hands to handlers via Extensions.
type tenant struct{ ID string }

// seen records what a server middleware saw, per request.
type seen struct {
	mu   sync.Mutex
	reqs []Request
}

func (s *seen) add(r *Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, *r)
	s.mu.Unlock()
}

func (s *seen) find(method string) (Request, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.reqs) - 1; i >= 0; i-- {
		if s.reqs[i].Method == method {
			return s.reqs[i], true
		}
	}
	return Request{}, false
}

func (s *seen) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.reqs {
		out = append(out, r.Method)
	}
	return out
}

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestMiddlewareFillsExtraOverEveryTransport: over memory, stdio and HTTP
// in both eras, a server middleware sees the method, the target name, the
// era, the transport and the client middleware's _meta and headers, fills
// Metadata and an Extensions value the tool reads, and adds result _meta
// after the handler ran.
func TestMiddlewareFillsExtraOverEveryTransport(t *testing.T) {
	for _, transport := range mwTransports {
		for _, era := range []Era{EraLegacy, EraModern} {
			t.Run(transport+"/"+era.String(), func(t *testing.T) {
				var saw seen
				mw := func(next MethodHandler) MethodHandler {
					return func(ctx context.Context, r *Request) (Result, error) {
						saw.add(r)
						id := "stream"
						if r.Header != nil {
							id = r.Header.Get("X-Tenant")
						}
						r.Extra.SetMetadata("tenant", id)
						SetExtension(&r.Extra.Extensions, &tenant{ID: id})
						res, err := next(ctx, r)
						if err == nil {
							r.Extra.SetResultMeta(map[string]any{"example.com/mw": "after " + r.Method})
						}
						return res, err
					}
				}
				srv, err := NewServer(ServerOptions{Middleware: []Middleware{mw}})
				if err != nil {
					t.Fatal(err)
				}
				if err := AddTool(srv, &Tool{Name: "whoami"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
					md, _ := e.GetMetadata("tenant")
					ext, ok := GetExtension[*tenant](&e.Extensions)
					if !ok {
						return "", errors.New("no extension")
					}
					tc, _ := e.TraceContext()
					return "md=" + md + " ext=" + ext.ID + " tp=" + tc.TraceParent, nil
				}); err != nil {
					t.Fatal(err)
				}
				var cliSaw []string
				var cliMu sync.Mutex
				cmw := func(next ClientHandler) ClientHandler {
					return func(ctx context.Context, r *ClientRequest) (jsontext.Value, error) {
						cliMu.Lock()
						cliSaw = append(cliSaw, r.Method+"|"+r.Name+"|"+r.Session.Transport().Name)
						cliMu.Unlock()
						if err := r.SetMeta("traceparent", testTraceparent); err != nil {
							return nil, err
						}
						r.Header = http.Header{"X-Tenant": {"acme"}}
						raw, err := next(ctx, r)
						if !r.ID.IsValid() {
							t.Errorf("%s: no id after next", r.Method)
						}
						return raw, err
					}
				}
				c := NewClient(ClientOptions{Era: era, Middleware: []ClientMiddleware{cmw}})
				s := connectOver(t, transport, srv, c)
				ctx := context.Background()
				res, err := s.CallTool(ctx, "whoami", nil)
				if err != nil {
					t.Fatal(err)
				}
				want := "md=stream ext=stream tp=" + testTraceparent
				if transport == TransportHTTP {
					want = "md=acme ext=acme tp=" + testTraceparent
				}
				if got := resultText(res); got != want || res.IsError {
					t.Fatalf("tool saw %q (isError %v), want %q", got, res.IsError, want)
				}
				if res.Meta["example.com/mw"] != "after tools/call" {
					t.Fatalf("result _meta: %v", res.Meta)
				}
				r, ok := saw.find(MethodToolsCall)
				if !ok {
					t.Fatalf("middleware saw %v", saw.methods())
				}
				if r.Name != "whoami" || r.Extra.Era() != era || r.Transport.Name != transport || r.ID.String() == "" || len(r.Params) == 0 {
					t.Fatalf("request as seen: name %q era %v transport %+v id %s params %s", r.Name, r.Extra.Era(), r.Transport, r.ID, r.Params)
				}
				wantNet := map[string]string{TransportMemory: "inproc", TransportStdio: "pipe", TransportHTTP: "tcp"}[transport]
				if r.Transport.Network != wantNet {
					t.Fatalf("network %q, want %q", r.Transport.Network, wantNet)
				}
				if transport == TransportHTTP && (r.Transport.Protocol != "http" || r.Transport.ProtocolVersion != "1.1" || r.Transport.RemoteAddr == "") {
					t.Fatalf("http transport info: %+v", r.Transport)
				}
				if (era == EraLegacy && transport == TransportHTTP) != (r.Extra.SessionID != "") {
					t.Fatalf("session id %q in era %v over %s", r.Extra.SessionID, era, transport)
				}
				if r.Extra.ProtocolVersion() == "" {
					t.Fatal("no protocol version")
				}
				// Lists and (legacy) the handshake go through the chain too.
				if _, err := s.ListTools(ctx, ""); err != nil {
					t.Fatal(err)
				}
				if _, ok := saw.find(MethodToolsList); !ok {
					t.Fatalf("tools/list not seen: %v", saw.methods())
				}
				if era == EraLegacy {
					if _, ok := saw.find(MethodInitialize); !ok {
						t.Fatalf("initialize not seen: %v", saw.methods())
					}
				}
				cliMu.Lock()
				defer cliMu.Unlock()
				if !strings.Contains(strings.Join(cliSaw, ","), MethodToolsCall+"|whoami|"+transport) {
					t.Fatalf("client middleware saw %v", cliSaw)
				}
			})
		}
	}
}

// TestMiddlewareShortCircuitAndOrder: the first middleware is the
// outermost, and a middleware can answer without calling next.
func TestMiddlewareShortCircuitAndOrder(t *testing.T) {
	var order []string
	var mu sync.Mutex
	tag := func(name string) Middleware {
		return func(next MethodHandler) MethodHandler {
			return func(ctx context.Context, r *Request) (Result, error) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				if name == "inner" && r.Name == "add" {
					return &CallToolResult{Content: []Content{Text("short")}}, nil
				}
				if name == "inner" && r.Name == "fail" {
					return nil, &jsonrpc.Error{Code: -32001, Message: "refused"}
				}
				return next(ctx, r)
			}
		}
	}
	srv := newTestServer(t, ServerOptions{Middleware: []Middleware{tag("outer"), tag("inner")}})
	c := startServer(t, srv, nil)
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}, nil, nil))
	if getPath(res, "content", 0, "text") != "short" || getPath(res, "resultType") != resultTypeComplete {
		t.Fatalf("short-circuit result: %v", res)
	}
	if e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "fail"}, nil, nil)); e.Code != -32001 || e.Message != "refused" {
		t.Fatalf("short-circuit error: %+v", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ",") != "outer,inner,outer,inner" {
		t.Fatalf("order %v", order)
	}
}

// TestMiddlewareResultMetaOnEveryPath: _meta a middleware adds after the
// handler reaches typed, verbatim, isError and input_required results.
func TestMiddlewareResultMetaOnEveryPath(t *testing.T) {
	mw := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			res, err := next(ctx, r)
			r.Extra.SetResultMeta(map[string]any{"example.com/mw": "set"})
			return res, err
		}
	}
	srv := newTestServer(t, ServerOptions{Middleware: []Middleware{mw}})
	if err := srv.AddRawTool(&Tool{Name: "raw", InputSchema: jsontext.Value(`{"type":"object"}`)},
		func(ctx context.Context, e *RequestHandlerExtra, p *CallToolParams) (*CallToolResult, error) {
			res := &CallToolResult{Content: []Content{Text("x")}}
			res.Meta = Meta{"widget": "kept"}
			return res, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "ask"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		r, err := e.Peer.Elicit(ctx, &ElicitParams{Message: "name?"})
		if err != nil {
			return "", err
		}
		return r.Action, nil
	}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, srv, nil)
	elicit := map[string]any{"elicitation": map[string]any{}}
	cases := []struct {
		name   string
		params map[string]any
		check  func(map[string]any) bool
	}{
		{"typed", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}, func(r map[string]any) bool { return r["structuredContent"] != nil }},
		{"verbatim", map[string]any{"name": "raw"}, func(r map[string]any) bool { return getPath(r, "_meta", "widget") == "kept" }},
		{"isError", map[string]any{"name": "fail"}, func(r map[string]any) bool { return r["isError"] == true }},
		{"input_required", map[string]any{"name": "ask"}, func(r map[string]any) bool { return r["resultType"] == resultTypeInputRequired }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := c.mustCall(MethodToolsCall, modern(tc.params, elicit, nil))
			if !tc.check(res) || getPath(res, "_meta", "example.com/mw") != "set" {
				t.Fatalf("result: %v", res)
			}
		})
	}
	// Legacy era too, and a method without a tool handler (tools/list).
	c2 := startServer(t, srv, nil)
	c2.initialize(nil)
	for _, p := range []map[string]any{{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}, {"name": "fail"}} {
		if res := c2.mustCall(MethodToolsCall, p); getPath(res, "_meta", "example.com/mw") != "set" {
			t.Fatalf("legacy result: %v", res)
		}
	}
	if res := c2.mustCall(MethodToolsList, nil); getPath(res, "_meta", "example.com/mw") != "set" {
		t.Fatalf("legacy list: %v", res)
	}
}

// TestHandlerResultMetaOnInputRequired: keys a handler sets before asking
// for input are on the input_required result, as on every other result.
func TestHandlerResultMetaOnInputRequired(t *testing.T) {
	srv := newTestServer(t, ServerOptions{})
	if err := AddTool(srv, &Tool{Name: "ask"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		e.SetResultMeta(map[string]any{"example.com/handler": "set"})
		r, err := e.Peer.Elicit(ctx, &ElicitParams{Message: "name?"})
		if err != nil {
			return "", err
		}
		return r.Action, nil
	}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, srv, nil)
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "ask"}, map[string]any{"elicitation": map[string]any{}}, nil))
	if res["resultType"] != resultTypeInputRequired || getPath(res, "_meta", "example.com/handler") != "set" {
		t.Fatalf("input_required result: %v", res)
	}
}

// TestMiddlewarePanicContained: a panicking middleware answers -32603 and
// the server keeps serving, over a stream and over HTTP.
func TestMiddlewarePanicContained(t *testing.T) {
	mw := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			if r.Name == "fail" {
				panic("middleware bug")
			}
			return next(ctx, r)
		}
	}
	srv := newTestServer(t, ServerOptions{Middleware: []Middleware{mw}})
	c := startServer(t, srv, nil)
	for range 2 {
		if e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "fail"}, nil, nil)); e.Code != jsonrpc.CodeInternalError {
			t.Fatalf("panic answered %+v", e)
		}
		if res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}, nil, nil)); res["isError"] == true {
			t.Fatalf("after panic: %v", res)
		}
	}
	e := newHTTPEnv(t, srv, nil)
	for range 2 {
		r := readJSON(t, e.post(modernBody(1, MethodToolsCall, map[string]any{"name": "fail"}, nil), modernHeaders(MethodToolsCall, "fail", "Accept", "application/json")))
		if r.Error == nil || r.Error.Code != jsonrpc.CodeInternalError {
			t.Fatalf("http panic answered %+v", r)
		}
		r = readJSON(t, e.post(modernBody(2, MethodToolsCall, map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}, nil), modernHeaders(MethodToolsCall, "add", "Accept", "application/json")))
		if r.Error != nil {
			t.Fatalf("http after panic: %+v", r.Error)
		}
	}
}

type ctxKey struct{}

// TestMiddlewareReplacesParamsAndCtx: params replaced by a middleware are
// what the method decodes, and the ctx it passes on is the handler's (and
// extra.Context()).
func TestMiddlewareReplacesParamsAndCtx(t *testing.T) {
	mw := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			if r.Name == "add" {
				r.Params = jsontext.Value(`{"name":"add","arguments":{"a":40,"b":2}}`)
			}
			return next(context.WithValue(ctx, ctxKey{}, "from middleware"), r)
		}
	}
	srv := newTestServer(t, ServerOptions{Middleware: []Middleware{mw}})
	if err := AddTool(srv, &Tool{Name: "ctx"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		a, _ := ctx.Value(ctxKey{}).(string)
		b, _ := e.Context().Value(ctxKey{}).(string)
		return a + "|" + b, nil
	}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, srv, nil)
	c.initialize(nil)
	res := c.mustCall(MethodToolsCall, map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}})
	if getPath(res, "structuredContent", "sum") != float64(42) {
		t.Fatalf("result: %v", res)
	}
	res = c.mustCall(MethodToolsCall, map[string]any{"name": "ctx"})
	if got := getPath(res, "content", 0, "text"); got != "from middleware|from middleware" {
		t.Fatalf("handler ctx: %v", got)
	}
}

// TestMiddlewareAuthIsTheRequestsAuth: an identity a middleware sets is the
// one the request is served under: modern results become private to
// caches and the access log names the principal.
func TestMiddlewareAuthIsTheRequestsAuth(t *testing.T) {
	mw := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			r.Extra.AuthContext = &AuthContext{Subject: "bob"}
			return next(ctx, r)
		}
	}
	var buf syncBuffer
	srv := newAccessLogServer(t, &buf, ServerOptions{Middleware: []Middleware{mw}})
	c := startServer(t, srv, nil)
	res := c.mustCall(MethodToolsList, modern(nil, nil, nil))
	if res["cacheScope"] != CacheScopePrivate {
		t.Fatalf("cacheScope %v for an authenticated caller", res["cacheScope"])
	}
	if r := recordFor(t, accessRecords(t, &buf), MethodToolsList, "1"); r["principal"] != "bob" {
		t.Fatalf("record %v", r)
	}
}

// TestMiddlewareSeesEmptyObjectForAbsentParams: a request sent with no
// params member reaches middleware with "{}", so a middleware (or the
// bridge) that decodes Params needs no rule of its own for the absent case.
func TestMiddlewareSeesEmptyObjectForAbsentParams(t *testing.T) {
	seen := make(chan string, 4)
	mw := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			var p paginatedParams
			if err := Unmarshal(r.Params, &p); err != nil {
				seen <- "decode: " + err.Error()
			} else {
				seen <- r.Method + " " + string(r.Params)
			}
			return next(ctx, r)
		}
	}
	srv := newTestServer(t, ServerOptions{Middleware: []Middleware{mw}})
	c := startServer(t, srv, nil)
	c.initialize(nil)
	<-seen // initialize
	for _, m := range []string{MethodPing, MethodToolsList} {
		if _, err := c.call(m, nil); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if got, want := <-seen, m+" {}"; got != want {
			t.Fatalf("middleware saw %q, want %q", got, want)
		}
	}
}
