package pmcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// testClient is a raw JSON-RPC client connected to a Server over an
// in-memory pipe.
type testClient struct {
	t     *testing.T
	conn  *rpcconn.Conn
	notes chan *jsonrpc.Request
}

// startServer serves srv on one end of a pipe and returns a client on the
// other. handler answers server-to-client requests (nil: -32601).
func startServer(t *testing.T, srv *Server, handler rpcconn.HandlerFunc) *testClient {
	t.Helper()
	a, b := memory.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(ctx, a) }()
	notes := make(chan *jsonrpc.Request, 1024)
	h := rpcconn.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.IsNotification() {
			select {
			case notes <- req:
			default:
				t.Errorf("test client: notification queue full")
			}
			return nil, nil
		}
		if handler != nil {
			return handler(ctx, req)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no handler"}
	})
	conn := rpcconn.NewConn(b, h, rpcconn.ConnOptions{})
	cliDone := make(chan error, 1)
	go func() { cliDone <- conn.Run(ctx) }()
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		<-srvDone
		<-cliDone
	})
	return &testClient{t: t, conn: conn, notes: notes}
}

func (c *testClient) call(method string, params any) (jsontext.Value, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.conn.Call(ctx, method, params)
}

// mustCall calls and decodes the result into a generic map.
func (c *testClient) mustCall(method string, params any) map[string]any {
	c.t.Helper()
	raw, err := c.call(method, params)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Fatalf("%s: decode %s: %v", method, raw, err)
	}
	return m
}

// callErr calls and returns the JSON-RPC error (failing if there is none).
func (c *testClient) callErr(method string, params any) *jsonrpc.Error {
	c.t.Helper()
	raw, err := c.call(method, params)
	var re *jsonrpc.Error
	if !errors.As(err, &re) {
		c.t.Fatalf("%s: want a JSON-RPC error, got result %s err %v", method, raw, err)
	}
	return re
}

func (c *testClient) initialize(caps map[string]any) map[string]any {
	c.t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	res := c.mustCall(MethodInitialize, map[string]any{
		"protocolVersion": Version20251125,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "test", "version": "1"},
	})
	if err := c.conn.Notify(context.Background(), NotificationInitialized, nil); err != nil {
		c.t.Fatal(err)
	}
	return res
}

// nextNote waits for the next notification with the given method.
func (c *testClient) nextNote(method string) *jsonrpc.Request {
	c.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case n := <-c.notes:
			if n.Method == method {
				return n
			}
		case <-timeout:
			c.t.Fatalf("no %s notification", method)
			return nil
		}
	}
}

// drainNotes returns the notifications received so far.
func (c *testClient) drainNotes() []*jsonrpc.Request {
	var out []*jsonrpc.Request
	for {
		select {
		case n := <-c.notes:
			out = append(out, n)
		default:
			return out
		}
	}
}

// modern builds params with the modern _meta.
func modern(params map[string]any, caps map[string]any, extraMeta map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	if caps == nil {
		caps = map[string]any{}
	}
	meta := map[string]any{
		MetaProtocolVersion:    Version20260728,
		MetaClientCapabilities: caps,
		MetaClientInfo:         map[string]any{"name": "test", "version": "1"},
	}
	for k, v := range extraMeta {
		meta[k] = v
	}
	params["_meta"] = meta
	return params
}

func getPath(m map[string]any, path ...any) any {
	var cur any = m
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = mm[k]
		case int:
			s, ok := cur.([]any)
			if !ok || k >= len(s) {
				return nil
			}
			cur = s[k]
		}
	}
	return cur
}
