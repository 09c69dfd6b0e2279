package pmcp

import (
	"context"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// DenyTools returns a middleware that makes the tools deny reports true
// for invisible to the request's caller: they are left out of tools/list,
// and calling one answers exactly what calling a tool that does not exist
// answers (the same code and message), so a caller cannot probe for
// them. deny runs once per listed tool and once per call, with the
// request (its Extra carries the caller's AuthContext, Metadata, ...). A
// panic in deny fails closed: the request gets -32603.
//
// Tools/call requests whose tool declares x-mcp-header parameters are
// checked against their headers by the HTTP transport before any
// middleware runs.
func DenyTools(deny func(ctx context.Context, req *Request, name string) bool) Middleware {
	return denyMiddleware(MethodToolsList, MethodToolsCall, unknownTool, deny, func(res Result, keep func(string) bool) {
		if l, ok := res.(*ListToolsResult); ok {
			out := make([]*Tool, 0, len(l.Tools))
			for _, t := range l.Tools {
				if t != nil && keep(t.Name) {
					out = append(out, t)
				}
			}
			l.Tools = out
		}
	})
}

// DenyPrompts is DenyTools for prompts: denied prompts are left out of
// prompts/list and prompts/get answers as for an unknown prompt.
func DenyPrompts(deny func(ctx context.Context, req *Request, name string) bool) Middleware {
	return denyMiddleware(MethodPromptsList, MethodPromptsGet, unknownPrompt, deny, func(res Result, keep func(string) bool) {
		if l, ok := res.(*ListPromptsResult); ok {
			out := make([]*Prompt, 0, len(l.Prompts))
			for _, p := range l.Prompts {
				if p != nil && keep(p.Name) {
					out = append(out, p)
				}
			}
			l.Prompts = out
		}
	})
}

func denyMiddleware(list, use string, unknown func(string) *jsonrpc.Error, deny func(context.Context, *Request, string) bool, filter func(Result, func(string) bool)) Middleware {
	return func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (Result, error) {
			switch req.Method {
			case use:
				if req.Name != "" && deny(ctx, req, req.Name) {
					return nil, unknown(req.Name)
				}
			case list:
				res, err := next(ctx, req)
				if err == nil && res != nil {
					filter(res, func(name string) bool { return !deny(ctx, req, name) })
				}
				return res, err
			}
			return next(ctx, req)
		}
	}
}

// unknownTool and unknownPrompt are the errors for a name that is not
// registered (or is denied to the caller).
func unknownTool(name string) *jsonrpc.Error   { return invalidParams("unknown tool %q", name) }
func unknownPrompt(name string) *jsonrpc.Error { return invalidParams("unknown prompt %q", name) }
