package pmcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// ---- helpers ----

type cliAddIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type cliAddOut struct {
	Sum int `json:"sum"`
}

// newClientTestServer builds a server with the features the client tests
// exercise.
func newClientTestServer(t *testing.T, opts ServerOptions) *Server {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "client-test-server"
		opts.Version = "1.2.3"
		opts.Instructions = "be nice"
	}
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(s, &Tool{Name: "add", Description: "adds"}, func(ctx context.Context, e *RequestHandlerExtra, in cliAddIn) (cliAddOut, error) {
		return cliAddOut{Sum: in.A + in.B}, nil
	}))
	must(AddTool(s, &Tool{Name: "fail", Description: "fails"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		return "", errors.New("it broke")
	}))
	must(AddTool(s, &Tool{Name: "work", Description: "progress and logs"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		_ = e.Log(LevelDebug, "debug record")
		_ = e.Log(LevelInfo, "info record")
		for i := 1; i <= 3; i++ {
			_ = e.ReportProgress(float64(i), 3, fmt.Sprintf("step %d", i))
		}
		return "done", nil
	}))
	must(AddTool(s, &Tool{Name: "wait", Description: "waits for cancellation"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		<-e.Cancelled()
		return "cancelled", nil
	}))
	must(AddTool(s, &Tool{Name: "ask", Description: "write-once peer calls"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		el, err := e.Peer.Elicit(ctx, &ElicitParams{Message: "name?", RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return "", err
		}
		sm, err := e.Peer.Sample(ctx, &CreateMessageParams{Messages: []*SamplingMessage{{Role: "user", Content: Text("hi")}}, MaxTokens: 5})
		if err != nil {
			return "", err
		}
		roots, err := e.Peer.ListRoots(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v/%s/%d", el.Content["name"], sm.Content.(*TextContent).Text, len(roots.Roots)), nil
	}))
	must(s.AddResource(&Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, e *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "A"}}}, nil
	}))
	must(s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"}, func(ctx context.Context, e *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "item " + r.Vars["id"]}}}, nil
	}))
	must(s.AddPrompt(&Prompt{Name: "greet", Description: "greets", Arguments: []*PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, e *RequestHandlerExtra, p *GetPromptParams) (*GetPromptResult, error) {
			return &GetPromptResult{Messages: []*PromptMessage{{Role: "user", Content: Text("hello " + p.Arguments["who"])}}}, nil
		}))
	return s
}

// serveOnPipe serves srv on one end of an in-memory pipe and returns the
// other end for the client.
func serveOnPipe(t *testing.T, srv *Server) jsonrpc.Stream {
	t.Helper()
	a, b := memory.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, a)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return b
}

// connectClient connects c over st and closes the session at cleanup.
func connectClient(t *testing.T, c *Client, st jsonrpc.Stream) *ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, st)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// fakeServer is a scripted JSON-RPC peer standing in for a server.
type fakeServer struct {
	conn *rpcconn.Conn

	mu   sync.Mutex
	seen []*jsonrpc.Request // every request and notification, in order
	note chan *jsonrpc.Request
}

// startFake runs h as a server on one end of a pipe and returns the fake
// and the client's end. notifications/cancelled cancels the named
// incoming request, as a real server does.
func startFake(t *testing.T, h rpcconn.HandlerFunc) (*fakeServer, jsonrpc.Stream) {
	t.Helper()
	a, b := memory.NewPipe()
	f := &fakeServer{note: make(chan *jsonrpc.Request, 256)}
	f.conn = rpcconn.NewConn(a, rpcconn.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		f.mu.Lock()
		f.seen = append(f.seen, req)
		f.mu.Unlock()
		if req.IsNotification() {
			if req.Method == NotificationCancelled {
				var p struct {
					RequestID jsonrpc.ID `json:"requestId"`
				}
				if Unmarshal(req.Params, &p) == nil {
					f.conn.CancelIncoming(p.RequestID)
				}
			}
			select {
			case f.note <- req:
			default:
			}
			return nil, nil
		}
		return h(ctx, req)
	}), rpcconn.ConnOptions{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.conn.Run(context.Background())
	}()
	t.Cleanup(func() {
		_ = f.conn.Close()
		<-done
	})
	return f, b
}

// requests returns the requests (not notifications) of method seen so far.
func (f *fakeServer) requests(method string) []*jsonrpc.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*jsonrpc.Request
	for _, r := range f.seen {
		if !r.IsNotification() && r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// waitNote waits for a notification of method.
func (f *fakeServer) waitNote(t *testing.T, method string) *jsonrpc.Request {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case n := <-f.note:
			if n.Method == method {
				return n
			}
		case <-timeout:
			t.Fatalf("no %s notification", method)
			return nil
		}
	}
}

// legacyHandler answers like a 2025-11-25-only server: server/discover is
// unknown.
func legacyHandler(version string, extra rpcconn.HandlerFunc) rpcconn.HandlerFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodInitialize:
			return jsontext.Value(`{"protocolVersion":"` + version + `","capabilities":{"tools":{}},"serverInfo":{"name":"legacy-only","version":"9"}}`), nil
		case MethodDiscover:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		}
		if extra != nil {
			return extra(ctx, req)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
	}
}

// modernDiscover answers server/discover like a modern server.
var modernDiscover = jsontext.Value(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake-modern","version":"1"}}}`)

// requestMetaOf decodes params._meta of a request.
func requestMetaOf(t *testing.T, req *jsonrpc.Request) map[string]any {
	t.Helper()
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := Unmarshal(req.Params, &p); err != nil {
		t.Fatalf("params of %s: %v", req.Method, err)
	}
	return p.Meta
}

// cliPath walks nested JSON objects.
func cliPath(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// ---- negotiation ----

func TestClientNegotiatesModernWithDualEraServer(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	c := NewClient(ClientOptions{Name: "t", Version: "1"})
	s := connectClient(t, c, serveOnPipe(t, srv))
	if s.Era() != EraModern || s.ProtocolVersion() != Version20260728 {
		t.Fatalf("era %v version %q, want modern 2026-07-28", s.Era(), s.ProtocolVersion())
	}
	if info := s.ServerInfo(); info == nil || info.Name != "client-test-server" || info.Version != "1.2.3" {
		t.Fatalf("server info %+v", info)
	}
	if caps := s.ServerCapabilities(); caps.Tools == nil || caps.Prompts == nil || caps.Resources == nil {
		t.Fatalf("server capabilities %+v", caps)
	}
	if s.Instructions() != "be nice" {
		t.Fatalf("instructions %q", s.Instructions())
	}
	res, err := s.CallTool(context.Background(), "add", map[string]int{"a": 2, "b": 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*TextContent).Text != `{"sum":5}` {
		t.Fatalf("result %+v", res)
	}
}

func TestClientForcedLegacy(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	s := connectClient(t, NewClient(ClientOptions{Era: EraLegacy}), serveOnPipe(t, srv))
	if s.Era() != EraLegacy || s.ProtocolVersion() != Version20251125 {
		t.Fatalf("era %v version %q", s.Era(), s.ProtocolVersion())
	}
	if s.ServerInfo().Name != "client-test-server" || s.Instructions() != "be nice" {
		t.Fatalf("info %+v instructions %q", s.ServerInfo(), s.Instructions())
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, _, err := CallToolTyped[cliAddOut](context.Background(), s, "add", cliAddIn{A: 20, B: 22})
	if err != nil || out.Sum != 42 {
		t.Fatalf("typed call: %+v %v", out, err)
	}
}

func TestClientFallsBackToLegacyOnlyServer(t *testing.T) {
	f, st := startFake(t, legacyHandler(version20250618, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == MethodToolsList {
			return jsontext.Value(`{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`), nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	}))
	c := NewClient(ClientOptions{Name: "fallback", Version: "2", Sampling: func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
		return nil, errors.New("unused")
	}})
	s := connectClient(t, c, st)
	if s.Era() != EraLegacy || s.ProtocolVersion() != version20250618 {
		t.Fatalf("era %v version %q", s.Era(), s.ProtocolVersion())
	}
	if s.ServerInfo().Name != "legacy-only" {
		t.Fatalf("server info %+v", s.ServerInfo())
	}
	f.waitNote(t, NotificationInitialized)
	// The probe carried the modern _meta; initialize the legacy shape with
	// the derived capabilities.
	probe := f.requests(MethodDiscover)
	if len(probe) != 1 {
		t.Fatalf("%d discover probes", len(probe))
	}
	m := requestMetaOf(t, probe[0])
	if m[MetaProtocolVersion] != Version20260728 || m[MetaClientCapabilities] == nil || cliPath(m, MetaClientInfo, "name") != "fallback" {
		t.Fatalf("probe _meta %v", m)
	}
	var ip initializeParams
	if err := Unmarshal(f.requests(MethodInitialize)[0].Params, &ip); err != nil {
		t.Fatal(err)
	}
	if ip.ProtocolVersion != Version20251125 || ip.ClientInfo.Name != "fallback" || ip.Capabilities.Sampling == nil || ip.Capabilities.Elicitation != nil || ip.Capabilities.Roots != nil {
		t.Fatalf("initialize params %+v", ip)
	}
	tools, err := s.AllTools(context.Background())
	if err != nil || len(tools) != 1 || tools[0].Name != "x" {
		t.Fatalf("tools %v %v", tools, err)
	}
	// Legacy requests carry no modern _meta, even when the caller tries.
	if m := requestMetaOf(t, f.requests(MethodToolsList)[0]); m != nil {
		t.Fatalf("legacy tools/list carried _meta %v", m)
	}
	_, _ = s.CallTool(context.Background(), "x", nil, WithMeta(Meta{MetaProtocolVersion: Version20260728, "example.com/k": 1}))
	if m := requestMetaOf(t, f.requests(MethodToolsCall)[0]); len(m) != 1 || m["example.com/k"] == nil {
		t.Fatalf("legacy tools/call _meta %v", m)
	}
}

func TestClientFallsBackWhenProbeTimesOut(t *testing.T) {
	// A legacy server that ignores the probe instead of answering it.
	f2, st2 := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == MethodDiscover {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return legacyHandler(Version20251125, nil)(ctx, req)
	})
	s := connectClient(t, NewClient(ClientOptions{ProbeTimeout: 50 * time.Millisecond}), st2)
	if s.Era() != EraLegacy {
		t.Fatalf("era %v", s.Era())
	}
	// The abandoned probe was cancelled.
	n := f2.waitNote(t, NotificationCancelled)
	var p struct {
		RequestID jsonrpc.ID `json:"requestId"`
	}
	if err := Unmarshal(n.Params, &p); err != nil || p.RequestID != f2.requests(MethodDiscover)[0].ID {
		t.Fatalf("cancelled %s (%v)", n.Params, err)
	}
}

func TestClientRenegotiatesOnUnsupportedVersion(t *testing.T) {
	f, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		m := struct {
			Meta struct {
				V string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		}{}
		_ = Unmarshal(req.Params, &m)
		if m.Meta.V != Version20260728 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version",
				Data: jsontext.Value(`{"supported":["2026-07-28"],"requested":"` + m.Meta.V + `"}`)}
		}
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodToolsList:
			return jsontext.Value(`{"tools":[],"resultType":"complete"}`), nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	})
	c := NewClient(ClientOptions{})
	c.modern = []string{"2099-01-01", Version20260728} // pretend we also speak a newer version
	s := connectClient(t, c, st)
	if s.Era() != EraModern || s.ProtocolVersion() != Version20260728 {
		t.Fatalf("era %v version %q", s.Era(), s.ProtocolVersion())
	}
	if got := len(f.requests(MethodDiscover)); got != 2 {
		t.Fatalf("%d discover requests, want 2", got)
	}
	if s.ServerInfo().Name != "fake-modern" {
		t.Fatalf("server info %+v", s.ServerInfo())
	}
	if _, err := s.ListTools(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if m := requestMetaOf(t, f.requests(MethodToolsList)[0]); m[MetaProtocolVersion] != Version20260728 {
		t.Fatalf("tools/list _meta %v", m)
	}
}

func TestClientUnsupportedVersionOutcomes(t *testing.T) {
	t.Run("legacy listed", func(t *testing.T) {
		f, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method == MethodDiscover {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "no", Data: jsontext.Value(`{"supported":["2025-03-26"]}`)}
			}
			return legacyHandler(version20250326, nil)(ctx, req)
		})
		s := connectClient(t, NewClient(ClientOptions{}), st)
		if s.Era() != EraLegacy || s.ProtocolVersion() != version20250326 {
			t.Fatalf("era %v version %q", s.Era(), s.ProtocolVersion())
		}
		var ip initializeParams
		_ = Unmarshal(f.requests(MethodInitialize)[0].Params, &ip)
		if ip.ProtocolVersion != version20250326 {
			t.Fatalf("offered %q", ip.ProtocolVersion)
		}
	})
	t.Run("nothing in common", func(t *testing.T) {
		_, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "no", Data: jsontext.Value(`{"supported":["1999-01-01"]}`)}
		})
		_, err := NewClient(ClientOptions{}).Connect(context.Background(), st)
		if !errors.Is(err, ErrNoCommonVersion) || !strings.Contains(err.Error(), "1999-01-01") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("forced modern does not fall back", func(t *testing.T) {
		f, st := startFake(t, legacyHandler(Version20251125, nil))
		_, err := NewClient(ClientOptions{Era: EraModern}).Connect(context.Background(), st)
		var re *jsonrpc.Error
		if !errors.As(err, &re) || re.Code != jsonrpc.CodeMethodNotFound {
			t.Fatalf("err %v", err)
		}
		if n := len(f.requests(MethodInitialize)); n != 0 {
			t.Fatalf("%d initialize requests", n)
		}
	})
	t.Run("legacy answers an unknown version", func(t *testing.T) {
		_, st := startFake(t, legacyHandler("2030-01-01", nil))
		_, err := NewClient(ClientOptions{}).Connect(context.Background(), st)
		if !errors.Is(err, ErrNoCommonVersion) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestClientModernMetaOnEveryRequest(t *testing.T) {
	f, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodToolsCall:
			return jsontext.Value(`{"content":[]}`), nil
		}
		return jsontext.Value(`{"tools":[]}`), nil
	})
	c := NewClient(ClientOptions{Name: "meta", Version: "3", LogLevel: LevelWarning,
		Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) { return nil, nil },
		Roots:       func(ctx context.Context) (*ListRootsResult, error) { return nil, nil }})
	s := connectClient(t, c, st)
	ctx := context.Background()
	if _, err := s.ListTools(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(ctx, "t", nil, WithMeta(Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", MetaProtocolVersion: "spoof", MetaProgressToken: "spoof"}),
		WithProgress(func(context.Context, *ProgressParams) {})); err != nil {
		t.Fatal(err)
	}
	for _, req := range append(f.requests(MethodToolsList), f.requests(MethodToolsCall)...) {
		m := requestMetaOf(t, req)
		if m[MetaProtocolVersion] != Version20260728 || m[MetaLogLevel] != "warning" || cliPath(m, MetaClientInfo, "name") != "meta" {
			t.Fatalf("%s _meta %v", req.Method, m)
		}
		caps, _ := m[MetaClientCapabilities].(map[string]any)
		if _, ok := caps["elicitation"]; !ok || caps["sampling"] != nil || caps["roots"] == nil {
			t.Fatalf("capabilities %v", caps)
		}
		if roots := caps["roots"].(map[string]any); len(roots) != 0 {
			t.Fatalf("modern roots capability %v", roots)
		}
		if req.Method == MethodToolsCall && (m["traceparent"] == nil || m[MetaProgressToken] == nil || m[MetaProgressToken] == "spoof") {
			t.Fatalf("tools/call _meta %v", m)
		}
	}
}

// ---- calls ----

func TestClientListsAndPageCap(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{PageSize: 2})
	for i := range 5 {
		if err := AddTool(srv, &Tool{Name: fmt.Sprintf("extra%d", i)}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) { return "", nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			s := connectClient(t, NewClient(ClientOptions{Era: era}), serveOnPipe(t, srv))
			ctx := context.Background()
			tools, err := s.AllTools(ctx)
			if err != nil || len(tools) != 10 {
				t.Fatalf("%d tools, %v", len(tools), err)
			}
			first, err := s.ListTools(ctx, "")
			if err != nil || len(first.Tools) != 2 || first.NextCursor == "" {
				t.Fatalf("first page %+v %v", first, err)
			}
			n := 0
			for tool, err := range listAll(ctx, s, MethodToolsList, func(r *ListToolsResult) ([]*Tool, string) { return r.Tools, r.NextCursor }) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 3 || tool == nil {
					break
				}
			}
			res, err := s.AllResources(ctx)
			if err != nil || len(res) != 1 {
				t.Fatalf("resources %v %v", res, err)
			}
			tmpl, err := s.AllResourceTemplates(ctx)
			if err != nil || len(tmpl) != 1 || tmpl[0].URITemplate != "test://item/{id}" {
				t.Fatalf("templates %v %v", tmpl, err)
			}
			prompts, err := s.AllPrompts(ctx)
			if err != nil || len(prompts) != 1 {
				t.Fatalf("prompts %v %v", prompts, err)
			}

			capped := connectClient(t, NewClient(ClientOptions{Era: era, MaxPages: 2}), serveOnPipe(t, srv))
			if _, err := capped.AllTools(ctx); !errors.Is(err, ErrTooManyPages) {
				t.Fatalf("page cap: %v", err)
			}
		})
	}
}

func TestClientRepeatedCursor(t *testing.T) {
	_, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return jsontext.Value(`{"prompts":[{"name":"p"}],"nextCursor":"same"}`), nil
	}))
	s := connectClient(t, NewClient(ClientOptions{}), st)
	if _, err := s.AllPrompts(context.Background()); !errors.Is(err, ErrTooManyPages) {
		t.Fatalf("err %v", err)
	}
}

func TestClientCallsBothEras(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			s := connectClient(t, NewClient(ClientOptions{Era: era}), serveOnPipe(t, srv))
			ctx := context.Background()

			out, res, err := CallToolTyped[cliAddOut](ctx, s, "add", map[string]any{"a": 1, "b": 2})
			if err != nil || out.Sum != 3 || res == nil {
				t.Fatalf("typed: %+v %+v %v", out, res, err)
			}
			_, res, err = CallToolTyped[cliAddOut](ctx, s, "fail", nil)
			var te *ToolError
			if !errors.As(err, &te) || te.Message != "it broke" || !res.IsError {
				t.Fatalf("tool error: %v %+v", err, res)
			}
			if _, err := s.CallTool(ctx, "add", []int{1}); err == nil {
				t.Fatal("non-object arguments accepted")
			}
			if _, err := s.CallTool(ctx, "nope", nil); err == nil {
				t.Fatal("unknown tool accepted")
			} else if var2 := (*jsonrpc.Error)(nil); !errors.As(err, &var2) || var2.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("unknown tool: %v", err)
			}

			rr, err := s.ReadResource(ctx, "test://item/7")
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "item 7" {
				t.Fatalf("read: %+v %v", rr, err)
			}
			gp, err := s.GetPrompt(ctx, "greet", map[string]string{"who": "bob"})
			if err != nil || gp.Messages[0].Content.(*TextContent).Text != "hello bob" {
				t.Fatalf("prompt: %+v %v", gp, err)
			}
			cp := &CompleteParams{Ref: CompleteReference{Type: "ref/prompt", Name: "greet"}}
			cp.Argument.Name, cp.Argument.Value = "who", "b"
			comp, err := s.Complete(ctx, cp)
			if err != nil || comp.Completion.Values == nil {
				t.Fatalf("complete: %+v %v", comp, err)
			}
		})
	}
}

func TestClientEraSpecificMethods(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	ctx := context.Background()
	modern := connectClient(t, NewClient(ClientOptions{}), serveOnPipe(t, srv))
	for name, err := range map[string]error{
		"ping":     modern.Ping(ctx),
		"setLevel": modern.SetLoggingLevel(ctx, LevelInfo),
		"sub":      modern.Subscribe(ctx, "test://a"),
		"unsub":    modern.Unsubscribe(ctx, "test://a"),
		"roots":    modern.NotifyRootsListChanged(ctx),
	} {
		if !errors.Is(err, ErrNotSupportedInEra) {
			t.Errorf("modern %s: %v", name, err)
		}
	}
	legacy := connectClient(t, NewClient(ClientOptions{Era: EraLegacy}), serveOnPipe(t, srv))
	if err := legacy.Listen(ctx, SubscriptionFilter{ToolsListChanged: true}); !errors.Is(err, ErrNotSupportedInEra) || !strings.Contains(err.Error(), "Subscribe") {
		t.Errorf("legacy listen: %v", err)
	}
	for name, err := range map[string]error{
		"ping":     legacy.Ping(ctx),
		"setLevel": legacy.SetLoggingLevel(ctx, LevelInfo),
		"sub":      legacy.Subscribe(ctx, "test://a"),
		"unsub":    legacy.Unsubscribe(ctx, "test://a"),
		"roots":    legacy.NotifyRootsListChanged(ctx),
	} {
		if err != nil {
			t.Errorf("legacy %s: %v", name, err)
		}
	}
}

func TestClientResourceNotFoundLegacyCode(t *testing.T) {
	_, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "Resource not found"}
	}))
	s := connectClient(t, NewClient(ClientOptions{}), st)
	_, err := s.ReadResource(context.Background(), "test://missing")
	var re *jsonrpc.Error
	if !errors.Is(err, ErrResourceNotFound) || !errors.As(err, &re) || re.Code != jsonrpc.CodeResourceNotFound {
		t.Fatalf("err %v", err)
	}
}

func TestClientCapsPeerStrings(t *testing.T) {
	long := strings.Repeat("x", 5000) + "\nforged log line"
	_, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: -1, Message: long}
	}))
	s := connectClient(t, NewClient(ClientOptions{}), st)
	_, err := s.CallTool(context.Background(), "t", nil)
	var re *jsonrpc.Error
	if !errors.As(err, &re) || len(re.Message) > peer.MaxStringBytes || strings.Contains(err.Error(), "\n") {
		t.Fatalf("message of %d bytes: %.80q", len(err.Error()), err)
	}
	if got := capPeerString("a\x00b\x1bc\u0085d\tok\xff"); got != "a b c d\tok\uFFFD" {
		t.Fatalf("capPeerString: %q", got)
	}
	if got := capPeerString(strings.Repeat("é", 1000)); len(got) > peer.MaxStringBytes || !strings.HasSuffix(got, "é...") {
		t.Fatalf("cut: %d bytes, %q", len(got), got[len(got)-8:])
	}
}

func TestClientDefaultCallTimeout(t *testing.T) {
	f, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	s := connectClient(t, NewClient(ClientOptions{CallTimeout: 50 * time.Millisecond}), st)
	start := time.Now()
	_, err := s.CallTool(context.Background(), "slow", nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	f.waitNote(t, NotificationCancelled)
}

func TestClientConnectFailureLeavesNothingRunning(t *testing.T) {
	a, b := memory.NewPipe()
	_ = a.Close() // the server is gone before the client speaks
	if _, err := NewClient(ClientOptions{}).Connect(context.Background(), b); err == nil {
		t.Fatal("Connect succeeded on a closed pipe")
	}
	if _, err := NewClient(ClientOptions{}).Connect(context.Background(), nil); err == nil {
		t.Fatal("Connect accepted a nil stream")
	}
}

func TestClientWaitAfterServerCloses(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	a, b := memory.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, a)
	}()
	s, err := NewClient(ClientOptions{}).Connect(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the server goes away
	<-done
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session did not notice the server closing")
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := s.ListTools(context.Background(), ""); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
