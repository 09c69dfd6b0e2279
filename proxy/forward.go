package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/relay"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// middleware answers every feature request from the upstreams; the rest
// (initialize, ping, logging/setLevel, server/discover, listen) is the
// server's own.
func (p *Proxy) middleware(next pmcp.MethodHandler) pmcp.MethodHandler {
	return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
		ctx = withDownstreamApps(ctx, req) // for the upstream sessions (apps.go)
		switch req.Method {
		case pmcp.MethodToolsList:
			return p.listTools(ctx, req)
		case pmcp.MethodPromptsList:
			return p.listPrompts(ctx, req)
		case pmcp.MethodResourcesList:
			return p.listResources(ctx, req)
		case pmcp.MethodResourcesTemplatesList:
			return p.listTemplates(ctx, req)
		case pmcp.MethodToolsCall, pmcp.MethodPromptsGet, pmcp.MethodResourcesRead:
			res, err := p.call(ctx, req)
			if errors.Is(err, errNoSuchURI) {
				return next(ctx, req) // the server's own answer to an unknown resource
			}
			return res, err
		case pmcp.MethodCompletionComplete:
			res, err := p.complete(ctx, req)
			if errors.Is(err, errNoSuchURI) {
				return next(ctx, req)
			}
			return res, err
		case pmcp.MethodTasksGet, pmcp.MethodTasksResult, pmcp.MethodTasksList, pmcp.MethodTasksCancel, pmcp.MethodTasksUpdate:
			return p.serveTask(ctx, req)
		case pmcp.MethodSkillsList:
			return p.listSkills(ctx, req)
		case pmcp.MethodSkillsGet:
			return p.getSkill(ctx, req)
		case pmcp.MethodResourcesSubscribe, pmcp.MethodResourcesUnsubscribe:
			var sp pmcp.SubscribeParams
			if err := pmcp.Unmarshal(req.Params, &sp); err != nil || sp.URI == "" {
				return next(ctx, req) // the server answers the malformed request
			}
			add := req.Method == pmcp.MethodResourcesSubscribe
			if err := p.subscribe(ctx, req, []string{sp.URI}, add); err != nil {
				return nil, err
			}
			res, err := next(ctx, req)
			if err != nil && add {
				_ = p.subscribe(context.WithoutCancel(ctx), req, []string{sp.URI}, false)
			}
			return res, err
		case pmcp.MethodSubscriptionsListen:
			var lp pmcp.ListenParams
			ok := pmcp.Unmarshal(req.Params, &lp) == nil
			if ok && len(lp.Notifications.ResourceSubscriptions) > 0 {
				uris := lp.Notifications.ResourceSubscriptions
				if err := p.subscribe(ctx, req, uris, true); err != nil {
					return nil, err
				}
				defer func() { _ = p.subscribe(context.WithoutCancel(ctx), req, uris, false) }()
			}
			return next(ctx, req)
		}
		return next(ctx, req)
	}
}

// conn returns the open session of up for the request, and its slot (also
// with an error when no session could be had, nil if there is no slot).
func (p *Proxy) conn(ctx context.Context, req *pmcp.Request, up *upstream) (*slot, *live, error) {
	if err := up.admit(max(p.upCallTimeout(up), up.health.breaker.cfg.cooldown())); err != nil {
		return nil, nil, err // the breaker is open: not a contact
	}
	sl, l, err := p.connOnce(ctx, req, up)
	if err != nil && errors.Is(err, ErrUpstreamGone) && (sl != nil && sl.hdr != nil || up.gone.Load()) {
		// A header-keyed slot stopped for another one (makeRoom) between
		// slotFor and get: its values get a fresh one. Or SetUpstreams
		// replaced the upstream meanwhile: its successor takes it.
		sl, l, err = p.connOnce(ctx, req, up)
	}
	if err != nil {
		p.unreachable(ctx, up, err)
		return sl, nil, err
	}
	return sl, l, nil
}

func (p *Proxy) connOnce(ctx context.Context, req *pmcp.Request, up *upstream) (*slot, *live, error) {
	if nu := p.successor(up); nu != nil {
		up = nu
	}
	sl, err := p.slotFor(req, up)
	if err != nil {
		return nil, nil, err
	}
	if sl.session && req.Extra.Peer != nil {
		sl.setPeer(req.Extra.Peer)
	}
	var hdr = req.Header
	if p.opts.Shared || req.Extra == nil || req.Extra.SessionKey().IsZero() {
		hdr = sl.hdr // nil but for a header-keyed slot: its own values only
	}
	l, err := sl.get(ctx, hdr)
	return sl, l, err
}

// endGrace bounds how long an upstream error that is no JSON-RPC error
// waits for the session to report that it ended (a child's exit status);
// an HTTP session whose transport broke is ended at once (live.breakOn).
const endGrace = 2 * time.Second

// upstreamError records what an upstream call returned in the upstream's
// status and maps it: a JSON-RPC error of the upstream unchanged, the end of the upstream session as -32603 naming
// the upstream and why it ended, the caller's cancellation as is.
func (p *Proxy) upstreamError(ctx context.Context, up *upstream, l *live, err error) error {
	if err != nil {
		if te := p.timedOut(ctx, up); te != nil {
			return te
		}
	}
	p.observe(ctx, up, err)
	if err == nil {
		return nil
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		if je.Code == jsonrpc.CodeParseError {
			// The upstream's answer could not be read (a line over the
			// stdio cap): -32700 would tell the downstream that its own
			// request was unreadable.
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %s", up.name, je.Message)}
		}
		return je
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if l != nil && l.breakOn(err) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %v", up.name, err)}
	}
	if l != nil {
		// A call fails as soon as the connection breaks, a moment before
		// the session has noticed that it ended.
		t := time.NewTimer(endGrace)
		defer t.Stop()
		select {
		case <-l.conn.Session.Done():
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q ended: %v", up.name, l.exitReason())}
		case <-t.C:
		}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %v", up.name, err)}
}

// forwardMeta is the request's _meta as passed upstream: every member
// except those the client manages. fp, when not nil, is the request's
// params as requestParams read them: when it found that _meta (the same
// bytes) has only managed members, _meta is not read again.
func forwardMeta(req *pmcp.Request, fp *featureParams) pmcp.Meta {
	raw := req.Extra.RequestMeta
	if len(raw) == 0 || fp != nil && fp.metaManaged && sameBytes(fp.meta, raw) || onlyManaged(raw) {
		return nil
	}
	var m map[string]jsontext.Value
	if pmcp.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := pmcp.Meta{}
	for k, v := range m {
		if managedMeta(k) {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resultMeta is an upstream result's _meta as passed downstream: without
// the serverInfo a modern upstream names itself with in every result, so
// that a modern client learns the bridge's (its server adds its own) and a
// legacy one gets no member of the other era. m is written: every caller
// passes the map of a result the client session has just decoded for it
// alone (a copy cost two allocations on every modern upstream's call).
func resultMeta(m pmcp.Meta) pmcp.Meta {
	if _, ok := m[pmcp.MetaServerInfo]; !ok {
		return m
	}
	delete(m, pmcp.MetaServerInfo)
	if len(m) == 0 {
		return nil
	}
	return m
}

// unknownName is the answer to a tools/call or prompts/get of a name the
// proxy cannot route: the same as pmcp.DenyTools and pmcp.DenyPrompts
// give for a denied one.
func unknownName(req *pmcp.Request) error {
	kind := "tool"
	if req.Method == pmcp.MethodPromptsGet {
		kind = "prompt"
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown %s %q", kind, req.Name)}
}

type featureParams struct {
	Name      string         `json:"name"`
	URI       string         `json:"uri"`
	Arguments jsontext.Value `json:"arguments"`
	Cursor    string         `json:"cursor"`
	Task      jsontext.Value `json:"task"`
	mrtrParams
	// meta is the _meta object the scan found (a sub-slice of the params),
	// metaManaged whether all its members are the client's own, written
	// without escapes (onlyManaged's answer).
	meta        jsontext.Value
	metaManaged bool
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// decodeFeatureParams decodes a request's params into fp as pmcp.Unmarshal
// does. The common params (string or null name, uri, cursor and
// requestState, raw arguments and task, no inputResponses) are read in
// one pass of the pooled scanner, without the reflection of a decode:
// the proxy reads every forwarded request's params. A name or uri equal
// to known (the server's Request.Name) is that string, not a copy.
// Anything else (an
// escaped member name, a member of another type, inputResponses, invalid
// JSON, duplicate names) is decoded by pmcp.Unmarshal, which reports it.
func decodeFeatureParams(raw jsontext.Value, known string, fp *featureParams) error {
	if scanFeatureParams(raw, known, fp) {
		return nil
	}
	*fp = featureParams{}
	return pmcp.Unmarshal(raw, fp)
}

// requestParams reads req's params into fp. A tools/call takes what the
// server read before the chain ran (pmcp.Request.CallToolParams): the
// bytes jsonrpc.Decode validated are not read a second time. Other
// requests, a tools/call with inputResponses (a map here) and params a
// middleware replaced take decodeFeatureParams.
func requestParams(req *pmcp.Request, fp *featureParams) error {
	cp, ok := req.CallToolParams()
	if !ok || len(cp.InputResponses) > 0 && cp.InputResponses.Kind() != 'n' {
		return decodeFeatureParams(req.Params, req.Name, fp)
	}
	fp.Name = cp.Name // the string req.Name is too
	// Copied as the scan copies them: a modern call outlives the request
	// whose body they are part of.
	fp.Arguments, fp.Task = bytes.Clone(cp.Arguments), bytes.Clone(cp.Task)
	fp.RequestState = cp.RequestState
	if len(cp.Meta) > 0 {
		// Where the server found _meta, and forwardMeta's answer for it.
		fp.meta, fp.metaManaged = cp.Meta, validatedManaged(cp.Meta)
	}
	return nil
}

// scanFeatureParams is decodeFeatureParams' one pass; false when it cannot
// be sure to read raw as the decode would.
func scanFeatureParams(raw jsontext.Value, known string, fp *featureParams) bool {
	sc := scan(raw)
	defer sc.done()
	d := &sc.dec
	if !enterObject(d) {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return false // an escaped name: the decode unescapes it
		}
		if string(name) == `"_meta"` && d.PeekKind() == '{' {
			if !scanMeta(raw, d, fp) {
				return false
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return false
		}
		var ok bool
		switch string(name[1 : len(name)-1]) {
		case "name":
			fp.Name, ok = scannedString(v, known)
		case "uri":
			fp.URI, ok = scannedString(v, known)
		case "cursor":
			fp.Cursor, ok = scannedString(v, "")
		case "arguments":
			fp.Arguments, ok = bytes.Clone(v), true
		case "task":
			fp.Task, ok = bytes.Clone(v), true
		case "requestState":
			fp.RequestState, ok = nil, true
			if v.Kind() != 'n' {
				var s string
				if s, ok = scannedString(v, ""); ok {
					fp.RequestState = &s
				}
			}
		case "inputResponses":
			ok = v.Kind() == 'n' // a map: decoded by Unmarshal
			fp.InputResponses = nil
		default:
			ok = true // not read, as by Unmarshal
		}
		if !ok {
			return false
		}
	}
	return leaveTop(d)
}

// enterObject reads the '{' that d must be at.
func enterObject(d *jsontext.Decoder) bool {
	if d.PeekKind() != '{' {
		return false
	}
	_, err := d.ReadToken()
	return err == nil
}

// leaveTop reads the '}' of the top-level object d is in and checks that
// nothing follows it.
func leaveTop(d *jsontext.Decoder) bool {
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	_, err := d.ReadToken()
	return err == io.EOF
}

// scanMeta reads the _meta object that d is at, noting in fp where it
// lies in raw and whether its members are all managed ones (see
// onlyManaged).
func scanMeta(raw []byte, d *jsontext.Decoder, fp *featureParams) bool {
	start := int(d.InputOffset())
	for start < len(raw) && raw[start] != '{' {
		start++ // the whitespace and colon after the name
	}
	managed, ok := readMeta(d)
	if !ok {
		return false
	}
	end := int(d.InputOffset())
	fp.meta, fp.metaManaged = raw[start:end:end], managed
	return true
}

// scannedString decodes a raw string or null (""), as Unmarshal into a
// string does (known when that is the string); false for any other value.
func scannedString(v jsontext.Value, known string) (string, bool) {
	switch v.Kind() {
	case 'n':
		return "", true
	case '"':
		if bytes.IndexByte(v, '\\') < 0 {
			if s := v[1 : len(v)-1]; string(s) == known {
				return known, true
			}
			return string(v[1 : len(v)-1]), true
		}
		b, err := jsontext.AppendUnquote(nil, v)
		return string(b), err == nil
	}
	return "", false
}

// call forwards tools/call, prompts/get and resources/read, the requests
// that may ask for input.
func (p *Proxy) call(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	// The params and the first round live as long as the call, in one
	// allocation.
	c := &struct {
		fp featureParams
		r  round
	}{}
	fp := &c.fp
	if err := requestParams(req, fp); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	target := fp.Name
	if req.Method == pmcp.MethodResourcesRead {
		target = fp.URI
	}
	if target == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing name or uri"}
	}
	modern := req.Extra.Era() == pmcp.EraModern
	task, ttl, err := wantsTask(req, fp)
	if err != nil {
		return nil, err
	}
	b := &lazyBinding{req: req, target: target, args: fp.Arguments}
	r := &c.r
	*r = round{progress: req.Extra.ProgressReporter, log: req.Extra.LogSink, level: req.Extra.EffectiveLogLevel()}
	if modern && fp.RequestState != nil {
		j, err := p.resume(b.get(), &fp.mrtrParams, r)
		if err != nil {
			return nil, err
		}
		return p.driveModern(ctx, req, b, j)
	}
	var ups []*upstream
	name := target
	if req.Method == pmcp.MethodResourcesRead {
		if ups, name = p.uriUpstreams(target); len(ups) == 0 {
			return nil, errNoSuchURI
		}
	} else {
		up, n, ok := p.route(target)
		if !ok {
			return nil, unknownName(req)
		}
		ups, name = []*upstream{up}, n
	}
	meta := forwardMeta(req, fp)
	var first error
	for _, up := range ups {
		res, err := p.callOne(ctx, req, up, name, fp, meta, r, modern, b, task, ttl)
		if err == nil || len(ups) == 1 {
			if name != target && req.Method == pmcp.MethodResourcesRead && notFound(err, name) {
				return nil, errNoSuchURI // a namespaced view its owner lacks
			}
			return res, err
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// callOne forwards the call to up; task (a tools/call asking for a task,
// with a 2025-11-25 client's ttl) makes it task-augmented upstream when
// the upstream serves tasks.
func (p *Proxy) callOne(ctx context.Context, req *pmcp.Request, up *upstream, name string, fp *featureParams, meta pmcp.Meta, r *round, modern bool, b *lazyBinding, task bool, ttl time.Duration) (pmcp.Result, error) {
	sl, l, err := p.conn(ctx, req, up)
	if err != nil {
		return nil, err
	}
	if req.Method == pmcp.MethodToolsCall && p.filtered || req.Method == pmcp.MethodPromptsGet && p.opts.AnswerUnknown {
		// With tool globs or per-caller views, an unknown tool or prompt
		// must answer exactly as a denied one (pmcp.DenyTools,
		// pmcp.DenyPrompts), not in the upstream's words.
		ok, err := sl.hasName(ctx, l, req.Method, name)
		if err != nil {
			return nil, p.upstreamError(ctx, up, l, err)
		}
		if !ok {
			return nil, unknownName(req)
		}
	}
	var owner string // whose task it is (see tasks_ids.go)
	if task && l.tasks {
		if owner, err = taskOwner(req); err != nil {
			return nil, err
		}
	}
	parent := ctx
	if modern {
		parent = detach(p.base, ctx) // the call outlives the round that started it
	}
	method := req.Method
	call := func(ctx context.Context, j *job) (pmcp.Result, error) {
		ctx, cancel := up.bound(ctx)
		defer cancel()
		var opts []pmcp.CallOption
		if meta != nil {
			opts = append(opts, pmcp.WithMeta(meta))
		}
		if r.progress != nil {
			opts = append(opts, pmcp.WithProgress(func(ctx context.Context, pp *pmcp.ProgressParams) {
				if cur := j.round.Load(); cur != nil && cur.progress != nil {
					pr := pmcp.Progress{Progress: pp.Progress, Message: pp.Message}
					if pp.Total != nil {
						pr.Total = *pp.Total
					}
					_ = cur.progress.ReportProgress(ctx, pr)
				}
			}))
		}
		var (
			res pmcp.Result
			err error
		)
		s := l.conn.Session
		switch method {
		case pmcp.MethodToolsCall:
			var args any
			if len(fp.Arguments) > 0 {
				args = fp.Arguments
			}
			if task && l.tasks {
				res, err = p.callTask(ctx, req, sl, l, owner, name, args, ttl, modern, opts)
				break
			}
			// The client need not decode the serverInfo resultMeta
			// deletes (internal/relay).
			var out *pmcp.CallToolResult
			if out, err = s.CallTool(relay.DropsServerInfo(ctx), name, args, opts...); err == nil {
				out.ResultType, out.Meta = "", resultMeta(out.Meta)
				res = out
			}
		case pmcp.MethodPromptsGet:
			var args map[string]string
			if len(fp.Arguments) > 0 {
				if err := pmcp.Unmarshal(fp.Arguments, &args); err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid prompt arguments: " + err.Error()}
				}
			}
			var out *pmcp.GetPromptResult
			if out, err = s.GetPrompt(ctx, name, args, opts...); err == nil {
				out.ResultType, out.Meta = "", resultMeta(out.Meta)
				res = out
			}
		default:
			var out *pmcp.ReadResourceResult
			if out, err = s.ReadResource(ctx, name, opts...); err == nil {
				out.ResultType, out.Meta = "", resultMeta(out.Meta)
				out.CacheFields = pmcp.CacheFields{}
				up.outContents(out.Contents)
				res = out
			}
		}
		return res, p.upstreamError(ctx, up, l, err)
	}
	if !modern {
		return p.runLegacy(ctx, sl, r, req.Extra.Peer, call)
	}
	j, err := p.startJob(parent, sl, r, call)
	if err != nil {
		return nil, err
	}
	return p.driveModern(ctx, req, b, j)
}
