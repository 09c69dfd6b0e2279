package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// With one upstream a list is forwarded page by page (the cursor is the
// upstream's); with several, every upstream's whole list is fetched (at
// most ClientOptions.MaxPages pages each) and answered in one page.

func (p *Proxy) cursor(req *pmcp.Request) (string, error) {
	var fp featureParams
	if err := decodeFeatureParams(req.Params, "", &fp); err != nil {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	if fp.Cursor != "" && len(p.upstreams()) > 1 {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
	}
	return fp.Cursor, nil
}

// eachUpstream runs fn for every upstream whose session declares the
// feature (has reports it), in order. With several upstreams, one that
// cannot be reached or fails the request is left out, so that the others'
// items are still listed: its status records why (Proxy.Status, logged
// when it changes) and a call routed to it fails naming it. Only when
// every upstream failed is the first failure the answer. Each upstream's
// part (its session included) is bounded by Options.ListTimeout, so one
// that hangs delays the list by that much at most; fn uses the ctx it is
// given.
func (p *Proxy) eachUpstream(ctx context.Context, req *pmcp.Request, has func(*live) bool, fn func(ctx context.Context, up *upstream, l *live) error) error {
	var first error
	failed := 0
	ups := p.upstreams() // one set for the whole request (SetUpstreams)
	for _, up := range ups {
		err := p.listPart(ctx, req, up, has, fn)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || len(ups) == 1 {
			return err
		}
		// An unreachable upstream was logged when it went down; one that
		// answers with an error is worth a warning each time.
		lvl := slog.LevelWarn
		if up.health.isDown() {
			lvl = slog.LevelDebug
		}
		p.log.Log(ctx, lvl, "proxy: an upstream is left out of a list", "method", req.Method, "upstream", up.name, "error", err)
		if first == nil {
			first = err
		}
		failed++
	}
	if failed == len(ups) {
		return first
	}
	return nil
}

// listPart runs fn on up's session for eachUpstream and records the
// outcome in up's status; with several upstreams, within ListTimeout.
func (p *Proxy) listPart(ctx context.Context, req *pmcp.Request, up *upstream, has func(*live) bool, fn func(ctx context.Context, up *upstream, l *live) error) error {
	parent := ctx
	if len(p.upstreams()) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.listTimeout())
		defer cancel()
	}
	_, l, err := p.conn(ctx, req, up) // a failure is recorded
	if err == nil {
		if !has(l) {
			return nil
		}
		if err = fn(ctx, up, l); err == nil {
			p.observe(ctx, up, nil)
			return nil
		}
		if len(p.upstreams()) == 1 {
			return p.upstreamError(ctx, up, l, err)
		}
		if parent.Err() != nil {
			return parent.Err()
		}
		if ctx.Err() == nil {
			p.observe(ctx, up, err)
			l.breakOn(err)
		}
		// No wait for the session's end as upstreamError does: the
		// others' items are ready.
		if je := (*jsonrpc.Error)(nil); !errors.As(err, &je) {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %v", up.name, err)}
		}
	}
	if parent.Err() == nil && ctx.Err() != nil {
		// The upstream's own slowness, not the caller's: it is down.
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: no answer to %s within %v", up.name, req.Method, p.listTimeout())}
		p.setHealth(up, err)
	}
	return err
}

func (p *Proxy) listTools(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	cur, err := p.cursor(req)
	if err != nil {
		return nil, err
	}
	out := &pmcp.ListToolsResult{Tools: []*pmcp.Tool{}}
	names := p.listed("tool")
	err = p.eachUpstream(ctx, req, func(l *live) bool { return l.capsTools }, func(ctx context.Context, up *upstream, l *live) error {
		var tools []*pmcp.Tool
		if len(p.upstreams()) == 1 {
			r, err := l.conn.Session.ListTools(ctx, cur)
			if err != nil {
				return err
			}
			tools, out.NextCursor = r.Tools, r.NextCursor
		} else if tools, err = l.conn.Session.AllTools(ctx); err != nil {
			return err
		}
		listed := make([]string, 0, len(tools))
		for _, t := range tools {
			cp := *t
			cp.Name = up.qualify(t.Name)
			cp.Meta = up.outToolMeta(t.Meta) // an app tool's view (apps.go)
			if names.keep(up, cp.Name) {
				out.Tools = append(out.Tools, &cp)
				listed = append(listed, cp.Name)
			}
		}
		up.known.note(pmcp.MethodToolsCall, listed, len(p.upstreams()) > 1 || cur == "")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Proxy) listPrompts(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	cur, err := p.cursor(req)
	if err != nil {
		return nil, err
	}
	out := &pmcp.ListPromptsResult{Prompts: []*pmcp.Prompt{}}
	names := p.listed("prompt")
	err = p.eachUpstream(ctx, req, func(l *live) bool { return l.capsPrompts }, func(ctx context.Context, up *upstream, l *live) error {
		var prompts []*pmcp.Prompt
		if len(p.upstreams()) == 1 {
			r, err := l.conn.Session.ListPrompts(ctx, cur)
			if err != nil {
				return err
			}
			prompts, out.NextCursor = r.Prompts, r.NextCursor
		} else if prompts, err = l.conn.Session.AllPrompts(ctx); err != nil {
			return err
		}
		listed := make([]string, 0, len(prompts))
		for _, pr := range prompts {
			cp := *pr
			cp.Name = up.qualify(pr.Name)
			if names.keep(up, cp.Name) {
				out.Prompts = append(out.Prompts, &cp)
				listed = append(listed, cp.Name)
			}
		}
		up.known.note(pmcp.MethodPromptsGet, listed, len(p.upstreams()) > 1 || cur == "")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Proxy) listResources(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	cur, err := p.cursor(req)
	if err != nil {
		return nil, err
	}
	out := &pmcp.ListResourcesResult{Resources: []*pmcp.Resource{}}
	uris := p.listed("resource")
	err = p.eachUpstream(ctx, req, func(l *live) bool { return l.capsRes }, func(ctx context.Context, up *upstream, l *live) error {
		var rs []*pmcp.Resource
		if len(p.upstreams()) == 1 {
			r, err := l.conn.Session.ListResources(ctx, cur)
			if err != nil {
				return err
			}
			rs, out.NextCursor = r.Resources, r.NextCursor
		} else if rs, err = l.conn.Session.AllResources(ctx); err != nil {
			return err
		}
		for _, r := range rs {
			cp := *r
			cp.URI = up.outURI(r.URI)
			if uris.keep(up, cp.URI) { // a read reaches the first upstream's
				out.Resources = append(out.Resources, &cp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Proxy) listTemplates(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	cur, err := p.cursor(req)
	if err != nil {
		return nil, err
	}
	out := &pmcp.ListResourceTemplatesResult{ResourceTemplates: []*pmcp.ResourceTemplate{}}
	uris := p.listed("resource template")
	err = p.eachUpstream(ctx, req, func(l *live) bool { return l.capsRes }, func(ctx context.Context, up *upstream, l *live) error {
		var ts []*pmcp.ResourceTemplate
		if len(p.upstreams()) == 1 {
			r, err := l.conn.Session.ListResourceTemplates(ctx, cur)
			if err != nil {
				return err
			}
			ts, out.NextCursor = r.ResourceTemplates, r.NextCursor
		} else if ts, err = l.conn.Session.AllResourceTemplates(ctx); err != nil {
			return err
		}
		for _, t := range ts {
			cp := *t
			cp.URITemplate = up.outURI(t.URITemplate)
			if uris.keep(up, cp.URITemplate) {
				out.ResourceTemplates = append(out.ResourceTemplates, &cp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// complete forwards completion/complete: a prompt reference is routed by
// its prefix, a resource-template reference is tried on each upstream.
func (p *Proxy) complete(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	var cp pmcp.CompleteParams
	if err := pmcp.Unmarshal(req.Params, &cp); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	cp.Meta = nil
	ups := p.upstreams()
	if cp.Ref.Type == "ref/prompt" {
		up, name, ok := p.route(cp.Ref.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", cp.Ref.Name)}
		}
		cp.Ref.Name, ups = name, []*upstream{up}
	} else if cp.Ref.URI != "" {
		// A namespaced ui:// template completes on its upstream alone.
		if ups, cp.Ref.URI = p.uriUpstreams(cp.Ref.URI); len(ups) == 0 {
			return nil, errNoSuchURI
		}
	}
	var opts []pmcp.CallOption
	if m := forwardMeta(req, nil); m != nil {
		opts = append(opts, pmcp.WithMeta(m))
	}
	var first error
	for _, up := range ups {
		_, l, err := p.conn(ctx, req, up)
		if err != nil {
			if first == nil {
				first = err
			}
			continue // another upstream may complete it
		}
		res, err := l.conn.Session.Complete(ctx, &cp, opts...)
		if err == nil {
			p.observe(ctx, up, nil)
			res.ResultType, res.Meta = "", resultMeta(res.Meta)
			return res, nil
		}
		if first == nil {
			first = p.upstreamError(ctx, up, l, err)
		}
	}
	if first == nil {
		return &pmcp.CompleteResult{Completion: pmcp.Completion{Values: []string{}}}, nil
	}
	return nil, first
}

// subscribe forwards resource subscriptions of the downstream to every
// upstream with resources that may serve them: a namespaced ui:// URI to
// its upstream alone, as that upstream knows it; any other URI to every
// upstream (it is not rewritten, so any may serve it). Each upstream's slot
// records them even while the upstream is down or its session broke, so
// its next session gets them (slot.dial). With several upstreams, one that
// cannot be reached takes the subscription for its next session, and one
// that rejects the URI (a legacy upstream that does not serve it) is
// skipped; only when none took it is the first failure the answer, and a
// failed subscription is recorded nowhere.
func (p *Proxy) subscribe(ctx context.Context, req *pmcp.Request, uris []string, add bool) error {
	type taken struct {
		sl   *slot
		uris []string
	}
	var (
		first error
		took  int
		slots []taken
	)
	ups := p.upstreams()
	for _, up := range ups {
		var mine []string
		for _, uri := range uris {
			if in, ok := up.inURI(uri); ok {
				mine = append(mine, in)
			}
		}
		if len(mine) == 0 {
			continue
		}
		sl, l, err := p.conn(ctx, req, up)
		if err == nil && !l.capsRes {
			continue
		}
		if sl != nil {
			slots = append(slots, taken{sl, mine})
			for _, uri := range mine {
				if e := sl.subscribe(ctx, uri, add); e != nil && err == nil {
					err = p.upstreamError(ctx, up, l, e)
				}
			}
			if l == nil && len(ups) > 1 && ctx.Err() == nil {
				took++ // down: its next session gets the subscription
				continue
			}
		}
		if err == nil {
			took++
			continue
		}
		if ctx.Err() != nil {
			first = ctx.Err()
			took = 0
			break
		}
		p.log.Debug("proxy: an upstream did not take a resource subscription", "upstream", up.name, "uris", mine, "error", err)
		if first == nil {
			first = err
		}
	}
	if first == nil || took > 0 {
		return nil
	}
	if add {
		for _, t := range slots {
			for _, uri := range t.uris {
				_ = t.sl.subscribe(context.WithoutCancel(ctx), uri, false)
			}
		}
	}
	return first
}
