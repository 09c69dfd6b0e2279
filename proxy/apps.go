package proxy

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// MCP Apps (extension io.modelcontextprotocol/ui) through the proxy.
//
//   - Declarations. The proxy declares the extension to its clients in
//     both eras (initialize, server/discover), as it declares tasks and
//     skills: without dialing; the upstreams that have views list them. A
//     client's own declaration (its mimeTypes) reaches the upstream it
//     talks to: the initialize of the upstream session of one legacy
//     downstream session carries it, and so does every request to a
//     2026-07-28 upstream (its per-request client capabilities), whoever
//     shares the session. An upstream session shared by several clients
//     (Options.Shared, or the one modern requests share with a 2025-11-25
//     upstream) is initialized with Options.Client.AppMIMETypes, or
//     pmcp.AppMIMEType when that is empty: the proxy passes views on.
//   - Names. With prefixes, ui:// URIs are namespaced like tool names
//     (naming.go: outURI, inURI) in resources/list, resource templates,
//     resources/read (routed to the owner by the namespaced URI, the
//     content's uri given back namespaced), subscriptions and their
//     updates, and every tool's _meta.ui.resourceUri and deprecated flat
//     ui/resourceUri key. _meta.ui.visibility passes as it is, and
//     app-only tools are listed and callable like any other.

// metaAppsFlatURI is the deprecated flat _meta key of a tool's view that
// pmcp writes next to _meta.ui.resourceUri (server_apps.go), for hosts
// that read only it.
const metaAppsFlatURI = "ui/resourceUri"

// outToolMeta is a tool's _meta as the downstream sees it: the view's URI,
// in _meta.ui.resourceUri and in the flat key, namespaced. m is not
// written; it is returned as it is when nothing changes.
func (up *upstream) outToolMeta(m pmcp.Meta) pmcp.Meta {
	if up.prefix == "" || m == nil {
		return m
	}
	var out pmcp.Meta
	clone := func() {
		if out == nil {
			out = maps.Clone(m)
		}
	}
	if flat, ok := m[metaAppsFlatURI].(string); ok && up.outURI(flat) != flat {
		clone()
		out[metaAppsFlatURI] = up.outURI(flat)
	}
	if ui := appUIObject(m["ui"]); ui != nil {
		if uri, ok := ui["resourceUri"].(string); ok && up.outURI(uri) != uri {
			clone()
			ui = maps.Clone(ui)
			ui["resourceUri"] = up.outURI(uri)
			out["ui"] = ui
		}
	}
	if out == nil {
		return m
	}
	return out
}

// appUIObject is a _meta.ui value as a JSON object: as decoded from an
// upstream's list, or marshaled from a typed pmcp.AppUI; nil otherwise.
func appUIObject(v any) map[string]any {
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return x
	}
	b, err := pmcp.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if pmcp.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// outContents namespaces the ui:// URIs of a read's contents (in place:
// they were decoded for this read).
func (up *upstream) outContents(cs []*pmcp.ResourceContents) {
	for _, c := range cs {
		if c != nil {
			c.URI = up.outURI(c.URI)
		}
	}
}

// uriUpstreams returns the upstreams that may serve uri as the downstream
// names it, and the URI they know it by: a namespaced ui:// URI is one
// upstream's, any other URI is tried on each. None for a ui:// URI no
// upstream's prefix begins.
func (p *Proxy) uriUpstreams(uri string) ([]*upstream, string) {
	ups := p.upstreams()
	for _, up := range ups {
		if in, ok := up.inURI(uri); ok {
			if in == uri {
				return ups, uri // not namespaced: any may serve it
			}
			return []*upstream{up}, in
		}
	}
	return nil, ""
}

// errNoSuchURI: a ui:// URI no upstream's prefix begins (or whose owner
// does not have it), answered as the server answers for any resource it
// does not have: in the client's era, naming the URI the client named.
var errNoSuchURI = errors.New("proxy: no upstream serves the URI")

// notFound reports whether err is an upstream's answer to a read of a
// resource uri it does not have: the 2025-11-25 code, or the 2026-07-28
// one (invalid params) naming uri in its data.
func notFound(err error, uri string) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return false
	}
	if je.Code == jsonrpc.CodeResourceNotFound {
		return true
	}
	var data struct {
		URI string `json:"uri"`
	}
	return je.Code == jsonrpc.CodeInvalidParams && pmcp.Unmarshal(je.Data, &data) == nil && data.URI == uri
}

// downstreamApps carries, in the context of the upstream calls a
// downstream request makes, that client's declaration of the extension
// (nil: it declares none), encoded.
type downstreamApps struct{ decl jsontext.Value }

type downstreamAppsKey struct{}

// noApps is the downstreamApps of every client that declares no Apps
// support: most of them, so shared instead of allocated per request.
var noApps = &downstreamApps{}

// withDownstreamApps records the downstream client's declaration of the
// extension in ctx, for the middleware of appsClient.
func withDownstreamApps(ctx context.Context, req *pmcp.Request) context.Context {
	if req.Extra == nil {
		return ctx
	}
	d := noApps
	if caps := req.Extra.ClientCapabilities(); caps != nil {
		if decl := caps.Extensions[pmcp.ExtensionApps]; decl != nil {
			// A declaration that cannot be encoded is not passed on:
			// the upstream sees the default.
			b, err := json.Marshal(decl, json.Deterministic(true))
			if err != nil {
				return ctx
			}
			d = &downstreamApps{decl: b}
		}
	}
	return context.WithValue(ctx, downstreamAppsKey{}, d)
}

// appsClient sets the Apps declaration of an upstream client: the default
// of a shared session, and the middleware that gives each request made
// for a downstream client that client's declaration instead (see the top
// of this file). shared: the session serves several downstream clients,
// so its initialize (and discovery) keep the default.
//
// The client itself declares nothing: most downstream clients declare no
// Apps support, and their requests then go upstream as the client wrote
// them. The middleware writes a declaration in only where one is due: the
// downstream client's, or the default in the requests made for no
// downstream request (the session's own: its handshake, its listen
// stream) and in a shared session's initialize and discovery.
func appsClient(opts *pmcp.ClientOptions, shared bool) {
	types := opts.AppMIMETypes
	if len(types) == 0 {
		types = []string{pmcp.AppMIMEType}
	}
	opts.AppMIMETypes = nil
	static, _ := json.Marshal(map[string]any{"mimeTypes": types}, json.Deterministic(true))
	last := &capsCache{}
	mw := func(next pmcp.ClientHandler) pmcp.ClientHandler {
		return func(ctx context.Context, r *pmcp.ClientRequest) (jsontext.Value, error) {
			if r.Incoming || len(r.Params) == 0 {
				return next(ctx, r)
			}
			decl := static // what the request declares
			if d, ok := ctx.Value(downstreamAppsKey{}).(*downstreamApps); ok && !(shared && (r.Method == pmcp.MethodInitialize || r.Method == pmcp.MethodDiscover)) {
				decl = d.decl
			}
			switch {
			case decl == nil:
				// What the client wrote: no declaration.
			case r.Method == pmcp.MethodInitialize:
				r.Params = setAppsDecl(r.Params, "capabilities", decl)
			case r.Session.Era() == pmcp.EraLegacy:
				// Legacy requests carry no capabilities.
			default:
				if start, end, ok := metaMember(r.Params, pmcp.MetaClientCapabilities); ok {
					// Every request of a session carries the same
					// capabilities: the rewritten ones are remembered
					// (capsOf) and spliced in.
					r.Params = spliceValue(r.Params, start, end, last.of(r.Params[start:end], decl))
				} else if caps, ok := r.Meta(pmcp.MetaClientCapabilities); ok {
					_ = r.SetMeta(pmcp.MetaClientCapabilities, setAppsDecl(caps, "", decl))
				}
			}
			return next(ctx, r)
		}
	}
	opts.Middleware = append(append([]pmcp.ClientMiddleware(nil), opts.Middleware...), mw)
}

// capsCache remembers the last rewrite of an upstream client's
// capabilities (setAppsDecl): one entry, replaced on a miss.
type capsCache struct {
	p atomic.Pointer[capsRewrite]
}

type capsRewrite struct{ caps, decl, out jsontext.Value }

// of returns caps with the Apps declaration decl (see setAppsDecl). The
// result is shared: callers must not write it.
func (c *capsCache) of(caps, decl jsontext.Value) jsontext.Value {
	if e := c.p.Load(); e != nil && bytes.Equal(e.caps, caps) && bytes.Equal(e.decl, decl) && (e.decl == nil) == (decl == nil) {
		return e.out
	}
	out := bytes.Clone(setAppsDecl(caps, "", decl)) // not caps' bytes, which are a request's
	c.p.Store(&capsRewrite{caps: bytes.Clone(caps), decl: bytes.Clone(decl), out: out})
	return out
}

// setAppsDecl returns obj with the Apps member of its capabilities'
// extensions set to decl (nil: removed). The capabilities are obj's member
// key, or obj itself when key is "". obj is returned unchanged when it is
// not what it should be.
func setAppsDecl(obj jsontext.Value, key string, decl jsontext.Value) jsontext.Value {
	if key != "" {
		var outer map[string]jsontext.Value
		if pmcp.Unmarshal(obj, &outer) != nil {
			return obj
		}
		caps, ok := outer[key]
		if !ok {
			caps = jsontext.Value("{}")
		}
		outer[key] = setAppsDecl(caps, "", decl)
		return marshalOr(outer, obj)
	}
	var caps, ext map[string]jsontext.Value
	if pmcp.Unmarshal(obj, &caps) != nil || caps == nil {
		return obj
	}
	if e, ok := caps["extensions"]; ok && pmcp.Unmarshal(e, &ext) != nil {
		return obj
	}
	if ext == nil {
		ext = map[string]jsontext.Value{}
	}
	if decl == nil {
		delete(ext, pmcp.ExtensionApps)
	} else {
		ext[pmcp.ExtensionApps] = decl
	}
	delete(caps, "extensions")
	if len(ext) > 0 {
		caps["extensions"] = marshalOr(ext, nil)
	}
	return marshalOr(caps, obj)
}

// marshalOr encodes a map with sorted keys, or returns or.
func marshalOr(m map[string]jsontext.Value, or jsontext.Value) jsontext.Value {
	b, err := json.Marshal(m, json.Deterministic(true))
	if err != nil {
		return or
	}
	return b
}
