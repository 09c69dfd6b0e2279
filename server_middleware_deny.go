package pmcp

import (
	"context"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
	return denyMiddleware(MethodToolsList, MethodToolsCall, unknownTool, deny, func(res Result) (*[]*Tool, *string, func(*Tool) string) {
		l, ok := res.(*ListToolsResult)
		if !ok {
			return nil, nil, nil
		}
		return &l.Tools, &l.NextCursor, func(t *Tool) string { return t.Name }
	})
}

// DenyPrompts is DenyTools for prompts: denied prompts are left out of
// prompts/list and prompts/get answers as for an unknown prompt.
func DenyPrompts(deny func(ctx context.Context, req *Request, name string) bool) Middleware {
	return denyMiddleware(MethodPromptsList, MethodPromptsGet, unknownPrompt, deny, func(res Result) (*[]*Prompt, *string, func(*Prompt) string) {
		l, ok := res.(*ListPromptsResult)
		if !ok {
			return nil, nil, nil
		}
		return &l.Prompts, &l.NextCursor, func(p *Prompt) string { return p.Name }
	})
}

// listView exposes the items and the cursor of a list result of E.
type listView[E any] func(Result) (items *[]*E, next *string, name func(*E) string)

// maxDeniedPages bounds the pages one filtered list request reads when
// whole pages are denied.
const maxDeniedPages = 1000

func denyMiddleware[E any](list, use string, unknown func(string) *jsonrpc.Error, deny func(context.Context, *Request, string) bool, view listView[E]) Middleware {
	return func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (Result, error) {
			switch req.Method {
			case use:
				if req.Name != "" && deny(ctx, req, req.Name) {
					return nil, unknown(req.Name)
				}
			case list:
				return filterList(ctx, req, next, deny, view)
			}
			return next(ctx, req)
		}
	}
}

// filterList serves a list request without the denied entries. A cursor
// names the last entry of its page, so it must never name a denied one:
// it is moved back to the last allowed entry of the page, and a page with
// no allowed entry is skipped (the next one is read in its place).
func filterList[E any](ctx context.Context, req *Request, next MethodHandler, deny func(context.Context, *Request, string) bool, view listView[E]) (Result, error) {
	params := req.Params
	defer func() { req.Params = params }()
	for range maxDeniedPages {
		res, err := next(ctx, req)
		if err != nil || res == nil {
			return res, err
		}
		items, cursor, name := view(res)
		if items == nil {
			return res, nil
		}
		kept := make([]*E, 0, len(*items))
		lastDenied := false
		for _, it := range *items {
			lastDenied = it == nil || deny(ctx, req, name(it))
			if !lastDenied {
				kept = append(kept, it)
			}
		}
		*items = kept
		switch {
		case *cursor == "" || !lastDenied:
			return res, nil
		case len(kept) > 0:
			*cursor = encodeCursor(name(kept[len(kept)-1]))
			return res, nil
		}
		// Nothing allowed on this page: read the next one instead.
		p, err := withCursor(params, *cursor)
		if err != nil {
			return nil, err
		}
		req.Params = p
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: too many denied pages"}
}

// withCursor returns params with its cursor member set.
func withCursor(params jsontext.Value, cursor string) (jsontext.Value, error) {
	m := map[string]jsontext.Value{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, invalidParams("invalid params: %v", err)
		}
	}
	c, err := json.Marshal(cursor)
	if err != nil {
		return nil, err
	}
	m["cursor"] = c
	b, err := json.Marshal(m, json.Deterministic(true))
	return jsontext.Value(b), err
}

// unknownTool and unknownPrompt are the errors for a name that is not
// registered (or is denied to the caller).
func unknownTool(name string) *jsonrpc.Error   { return invalidParams("unknown tool %q", name) }
func unknownPrompt(name string) *jsonrpc.Error { return invalidParams("unknown prompt %q", name) }
