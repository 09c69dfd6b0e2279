package pmcp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestWireErrorOneMapping: an error maps to the same JSON-RPC error
// whichever handler or middleware returned it, in both eras, with and
// without a middleware chain (wireError, applied once by the dispatcher
// after the chain). A completion handler's *MissingCapabilityError is
// -32021 as its documentation says, not -32603; a middleware's
// *URLElicitationRequiredError takes its era's form as a handler's does
// (-32042 in the legacy era).
func TestWireErrorOneMapping(t *testing.T) {
	urlErr := &URLElicitationRequiredError{Elicitations: []*ElicitParams{{Message: "Sign in", URL: "https://example.com/s", ElicitationID: "el-1"}}}
	urlCaps := map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	for _, c := range []struct {
		name     string
		fromMW   bool // the middleware returns err, else the completion handler
		err      error
		era      string
		wantCode int64
	}{
		{"completion missing capability, legacy", false, missingCap("sampling"), "legacy", jsonrpc.CodeMissingRequiredClientCapability},
		{"completion missing capability, modern", false, missingCap("sampling"), "modern", jsonrpc.CodeMissingRequiredClientCapability},
		{"completion plain error", false, errors.New("boom"), "modern", jsonrpc.CodeInternalError},
		{"middleware URL elicitation, legacy", true, urlErr, "legacy", jsonrpc.CodeURLElicitationRequired},
		{"middleware missing capability, modern", true, missingCap("roots"), "modern", jsonrpc.CodeMissingRequiredClientCapability},
	} {
		for _, withMW := range []bool{false, true} {
			if c.fromMW && !withMW {
				continue
			}
			opts := ServerOptions{Name: "wire", Version: "1",
				Completion: func(ctx context.Context, e *RequestHandlerExtra, p *CompleteParams) (*CompleteResult, error) {
					if c.fromMW {
						return &CompleteResult{}, nil
					}
					return nil, c.err
				}}
			if withMW {
				opts.Middleware = []Middleware{func(next MethodHandler) MethodHandler {
					return func(ctx context.Context, r *Request) (Result, error) {
						if c.fromMW && r.Method == MethodCompletionComplete {
							return nil, c.err
						}
						return next(ctx, r)
					}
				}}
			}
			srv, err := NewServer(opts)
			if err != nil {
				t.Fatal(err)
			}
			cl := startServer(t, srv, nil)
			params := map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "a", "value": "v"}}
			if c.era == "modern" {
				params = modern(params, urlCaps, nil)
			} else {
				cl.initialize(urlCaps)
			}
			re := cl.callErr(MethodCompletionComplete, params)
			if re.Code != c.wantCode {
				t.Errorf("%s (middleware chain %v): code %d %q, want %d", c.name, withMW, re.Code, re.Message, c.wantCode)
			}
		}
	}
}

// TestErrorCodeIsTheWireCode: the code a middleware computes with
// ErrorCode from what next returned (as package otel does) is the code the
// client receives, and the task a tool ends with a protocol error stores
// the same error.
func TestErrorCodeIsTheWireCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"missing capability", missingCap("sampling")},
		{"wrapped missing capability", fmt.Errorf("cannot sample: %w", missingCap("sampling"))},
		{"input outside a multi-round-trip request", &inputRequiredError{}},
		{"JSON-RPC error", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}},
		{"plain", errors.New("boom")},
	} {
		var seen int64
		srv, err := NewServer(ServerOptions{Name: "wire", Version: "1",
			Completion: func(ctx context.Context, e *RequestHandlerExtra, p *CompleteParams) (*CompleteResult, error) {
				return nil, c.err
			},
			Middleware: []Middleware{func(next MethodHandler) MethodHandler {
				return func(ctx context.Context, r *Request) (Result, error) {
					res, err := next(ctx, r)
					seen = ErrorCode(err)
					return res, err
				}
			}}})
		if err != nil {
			t.Fatal(err)
		}
		cl := startServer(t, srv, nil)
		cl.initialize(nil)
		re := cl.callErr(MethodCompletionComplete, map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "a", "value": "v"}})
		if seen != re.Code {
			t.Errorf("%s: ErrorCode says %d, the client got %d %q", c.name, seen, re.Code, re.Message)
		}
		if te := taskErrorOf(c.err); te.Code != re.Code || te.Message != re.Message {
			t.Errorf("%s: the task stores %d %q, the client got %d %q", c.name, te.Code, te.Message, re.Code, re.Message)
		}
	}
}
