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
	return denyMiddleware(MethodToolsList, TargetTool, deniedTool, deny, func(res Result) (*[]*Tool, *string, func(*Tool) string) {
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
	return denyMiddleware(MethodPromptsList, TargetPrompt, deniedPrompt, deny, func(res Result) (*[]*Prompt, *string, func(*Prompt) string) {
		l, ok := res.(*ListPromptsResult)
		if !ok {
			return nil, nil, nil
		}
		return &l.Prompts, &l.NextCursor, func(p *Prompt) string { return p.Name }
	})
}

// DenyResources is DenyTools for resources, by URI: denied resources are
// left out of resources/list, and resources/read, resources/subscribe and
// resources/unsubscribe of one answer as for a URI nothing serves (the
// era's "Resource not found" error). Resource templates are left out of
// resources/templates/list when deny reports true for their URI template
// as written (for example "file:///{path}").
func DenyResources(deny func(ctx context.Context, req *Request, uri string) bool) Middleware {
	uses := denyMiddleware(MethodResourcesList, TargetResource, deniedResource, deny, func(res Result) (*[]*Resource, *string, func(*Resource) string) {
		l, ok := res.(*ListResourcesResult)
		if !ok {
			return nil, nil, nil
		}
		return &l.Resources, &l.NextCursor, func(r *Resource) string { return r.URI }
	})
	templates := denyMiddleware(MethodResourcesTemplatesList, TargetNone, nil, deny, func(res Result) (*[]*ResourceTemplate, *string, func(*ResourceTemplate) string) {
		l, ok := res.(*ListResourceTemplatesResult)
		if !ok {
			return nil, nil, nil
		}
		return &l.ResourceTemplates, &l.NextCursor, func(t *ResourceTemplate) string { return t.URITemplate }
	})
	return func(next MethodHandler) MethodHandler { return uses(templates(next)) }
}

// listView exposes the items and the cursor of a list result of E.
type listView[E any] func(Result) (items *[]*E, next *string, name func(*E) string)

// maxDeniedPages bounds the pages one filtered list request reads when
// whole pages are denied.
const maxDeniedPages = 1000

// denyMiddleware filters the list method list with deny and refuses the
// requests whose target (in the method table) is of kind and denied with
// unknown's error; TargetNone refuses nothing.
func denyMiddleware[E any](list string, kind TargetKind, unknown func(*Request) error, deny func(context.Context, *Request, string) bool, view listView[E]) Middleware {
	return func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (Result, error) {
			if req.Method == list {
				return filterList(ctx, req, next, deny, view)
			}
			if kind != TargetNone && req.Name != "" && TargetOf(req.Method) == kind && deny(ctx, req, req.Name) {
				return nil, unknown(req)
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

// The refusals of the deny middleware: what the server answers for a
// target nothing serves.
func deniedTool(req *Request) error     { return unknownTool(req.Name) }
func deniedPrompt(req *Request) error   { return unknownPrompt(req.Name) }
func deniedResource(req *Request) error { return resourceNotFound(req.Extra.Era(), req.Name) }
