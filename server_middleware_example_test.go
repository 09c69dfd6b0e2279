package pmcp_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/memory"
)

// connectPipe serves srv on an in-memory pipe and connects c to it.
func connectPipe(srv *pmcp.Server, c *pmcp.Client) (*pmcp.ClientSession, func()) {
	a, b := memory.NewPipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(context.Background(), a)
	}()
	s, err := c.Connect(context.Background(), b)
	if err != nil {
		log.Fatal(err)
	}
	return s, func() {
		_ = s.Close()
		<-done
	}
}

// Middleware fills RequestHandlerExtra before the handler runs: here the
// tenant from an HTTP header becomes Metadata the tool reads. The same
// middleware serves stdio and in-memory requests (Header is nil there).
func ExampleMiddleware() {
	tenant := func(next pmcp.MethodHandler) pmcp.MethodHandler {
		return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
			if req.Header != nil {
				req.Extra.SetMetadata("tenant", req.Header.Get("X-Tenant"))
			}
			return next(ctx, req)
		}
	}
	srv, _ := pmcp.NewServer(pmcp.ServerOptions{Middleware: []pmcp.Middleware{tenant}})
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "whoami"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct{}) (string, error) {
		t, _ := extra.GetMetadata("tenant")
		return "tenant " + t, nil
	})
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()

	s, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(context.Background(), ts.URL,
		pmcp.HTTPClientOptions{Header: http.Header{"X-Tenant": {"acme"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(context.Background(), "whoami", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*pmcp.TextContent).Text)
	// Output: tenant acme
}

// DenyTools hides tools per request: a denied tool is not listed, and
// calling it gets the same error as a tool that does not exist.
func ExampleDenyTools() {
	adminOnly := func(ctx context.Context, req *pmcp.Request, name string) bool {
		role, _ := req.Extra.GetMetadata("role") // set by an earlier middleware
		return name == "drop_table" && role != "admin"
	}
	srv, _ := pmcp.NewServer(pmcp.ServerOptions{Middleware: []pmcp.Middleware{pmcp.DenyTools(adminOnly)}})
	for _, name := range []string{"drop_table", "select"} {
		_ = pmcp.AddTool(srv, &pmcp.Tool{Name: name}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct{}) (string, error) {
			return "ok", nil
		})
	}
	s, stop := connectPipe(srv, pmcp.NewClient(pmcp.ClientOptions{}))
	defer stop()
	tools, _ := s.AllTools(context.Background())
	for _, t := range tools {
		fmt.Println("listed:", t.Name)
	}
	_, err := s.CallTool(context.Background(), "drop_table", nil)
	fmt.Println(err)
	_, err = s.CallTool(context.Background(), "no_such_tool", nil)
	fmt.Println(err)
	// Output:
	// listed: select
	// pmcp: tools/call: jsonrpc error -32602: unknown tool "drop_table"
	// pmcp: tools/call: jsonrpc error -32602: unknown tool "no_such_tool"
}

// Client middleware sees every outgoing request and can put W3C trace
// context into its _meta (and, over HTTP, into headers); the server reads it
// with RequestHandlerExtra.TraceContext.
func ExampleClientMiddleware() {
	srv, _ := pmcp.NewServer(pmcp.ServerOptions{})
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "trace"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct{}) (string, error) {
		tc, _ := extra.TraceContext()
		return tc.TraceParent, nil
	})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	inject := func(next pmcp.ClientHandler) pmcp.ClientHandler {
		return func(ctx context.Context, req *pmcp.ClientRequest) (jsontext.Value, error) {
			if !req.Incoming {
				if err := req.SetMeta("traceparent", tp); err != nil {
					return nil, err
				}
				req.Header = http.Header{"Traceparent": {tp}}
			}
			return next(ctx, req)
		}
	}
	s, stop := connectPipe(srv, pmcp.NewClient(pmcp.ClientOptions{Middleware: []pmcp.ClientMiddleware{inject}}))
	defer stop()
	res, err := s.CallTool(context.Background(), "trace", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*pmcp.TextContent).Text)
	// Output: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}

// With a Logger the server writes one Info record per request: method,
// target name, era, protocol version, id, session (legacy HTTP only),
// transport, duration, outcome (and JSON-RPC code), response bytes and the
// authenticated principal. Arguments, results and tokens are never logged.
// Time, duration and response size are dropped here to keep the output
// stable.
func ExampleServerOptions_accessLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" || a.Key == "response_bytes" {
				return slog.Attr{}
			}
			return a
		},
	}))
	srv, _ := pmcp.NewServer(pmcp.ServerOptions{Logger: logger})
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	s, stop := connectPipe(srv, pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraModern}))
	defer stop()
	_, _ = s.CallTool(context.Background(), "echo", map[string]any{"text": "a secret"})
	_, _ = s.CallTool(context.Background(), "nope", nil)
	// Output:
	// level=INFO msg="mcp request" method=server/discover era=modern protocol_version=2026-07-28 id=1 transport=memory outcome=ok
	// level=INFO msg="mcp request" method=tools/call name=echo era=modern protocol_version=2026-07-28 id=2 transport=memory outcome=ok
	// level=INFO msg="mcp request" method=tools/call name=nope era=modern protocol_version=2026-07-28 id=3 transport=memory outcome=error code=-32602
}
