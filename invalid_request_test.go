package pmcp

import (
	"context"
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// A -32600 (invalid request) error returned by a middleware or a handler
// must reach the client like any other error. It used to be taken for the
// internal "subscription ended" marker, which shares that code (and
// *jsonrpc.Error's errors.Is compares codes): no response was sent and the
// access log said "ok".
func TestInvalidRequestErrorIsAnswered(t *testing.T) {
	srv, err := NewServer(ServerOptions{Middleware: []Middleware{func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (Result, error) {
			if req.Method == MethodToolsList {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "refused by policy"}
			}
			return next(ctx, req)
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	type noArgs struct{}
	if err := AddTool(srv, &Tool{Name: "t"}, func(context.Context, *RequestHandlerExtra, noArgs) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, srv, nil)
	c.initialize(nil)
	if e := c.callErr(MethodToolsList, map[string]any{}); e.Code != jsonrpc.CodeInvalidRequest || e.Message != "refused by policy" {
		t.Fatalf("got %d %q", e.Code, e.Message)
	}
	if got := ErrorCode(&jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest}); got != jsonrpc.CodeInvalidRequest {
		t.Fatalf("ErrorCode of a -32600 error = %d", got)
	}
}
