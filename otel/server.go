package otel

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ServerMiddleware returns server middleware that wraps every incoming
// request, in both eras and on every transport, in a SERVER span named
// "{mcp.method.name} {target}" (target: the tool of tools/call, the prompt
// of prompts/get; resource URIs stay out of the name) and records
// mcp.server.operation.duration.
//
// The span's parent is the trace context the client put in params._meta;
// without one, the HTTP span already in ctx (for example otelhttp's), or
// else the context of the request's HTTP headers. When _meta gives the
// parent, the span links to the HTTP span instead. Baggage from _meta (or
// the headers) reaches the handler's context.
//
// Errors follow the server rules of the MCP conventions: an error the
// caller caused (-32700, -32600, -32601, -32602, -32002, -32020, -32021,
// -32022) sets rpc.response.status_code but is not a failure; any other
// error sets error.type to its code and the ERROR status; a tool result
// with isError set is error.type "tool_error". Long-lived
// subscriptions/listen streams get a span but are kept out of the
// duration histogram.
func ServerMiddleware(opts Options) pmcp.Middleware {
	c := opts.resolve()
	hist := c.durationHistogram(MetricServerOperationDuration, "Duration of MCP requests as the server processes them.")
	sessions := c.durationHistogram(MetricServerSessionDuration, "Duration of legacy MCP sessions, from initialize to the session's end.")
	ops := newOpCache(opts.OperationCacheSize, opts.MaxMetricTargets)
	return func(next pmcp.MethodHandler) pmcp.MethodHandler {
		return func(ctx context.Context, r *pmcp.Request) (res pmcp.Result, err error) {
			start := time.Now()
			parent, links := c.serverParent(ctx, r.Extra.RequestMeta, r.Header)
			key := serverOpKey(r.Method, r.Name, r.Extra.ProtocolVersion(), r.Transport)
			key.nameOther = r.Name != "" && !r.NameRegistered()
			op := ops.get(key)
			// The span's attributes: the operation's, then the
			// request's own (see spanScratch.start).
			scratch := spanScratchPool.Get().(*spanScratch)
			sattrs := append(scratch.attrs[:0], op.attrs...)
			if r.ID.IsValid() {
				sattrs = append(sattrs, KeyJSONRPCRequestID.String(idString(r.ID)))
			}
			if id := r.Extra.SessionID; id != "" && r.Extra.Era() == pmcp.EraLegacy {
				sattrs = append(sattrs, KeySessionID.String(id))
			}
			sattrs = appendClientAddr(sattrs, r.Transport.RemoteAddr)
			spanCtx, span := scratch.start(c.tracer, parent, op.spanName, start, sattrs, links)
			finished := false
			defer func() {
				if !finished { // next panicked: the chain turns it into -32603
					outcome{errorType: "-32603", statusCode: "-32603", message: "panic"}.end(span, nil)
				}
			}()
			res, err = next(spanCtx, r)
			finished = true
			if ir, ok := res.(*pmcp.InitializeResult); ok && err == nil && r.Extra.ProtocolVersion() == "" && ir.ProtocolVersion != "" {
				// The version initialize negotiates is known only now.
				span.SetAttributes(KeyProtocolVersion.String(ir.ProtocolVersion))
				key.version = ir.ProtocolVersion
				op = ops.get(key)
			}
			o := serverOutcome(res, err)
			o.end(span, err)
			if r.Method != pmcp.MethodSubscriptionsListen {
				hist.Record(ctx, time.Since(start).Seconds(), op.record(o)...)
			}
			if r.Method == pmcp.MethodInitialize && err == nil {
				watchSession(sessions, start, r, res)
			}
			return res, err
		}
	}
}

// spanScratch is where a server span's start options are gathered: its
// attributes (an operation's at most 7, plus id, session and client
// address and port) and the option list.
type spanScratch struct {
	attrs []attribute.KeyValue
	opts  []trace.SpanStartOption
}

var spanScratchPool = sync.Pool{New: func() any {
	return &spanScratch{attrs: make([]attribute.KeyValue, 0, 12), opts: make([]trace.SpanStartOption, 0, 4)}
}}

// Span start options that never change.
var spanKindServer = trace.WithSpanKind(trace.SpanKindServer)

// start starts a SERVER span with every attribute given at the start,
// where samplers see them, and puts the scratch back in its pool:
// trace.NewSpanStartConfig, the only way a Tracer can apply a
// SpanStartOption, copies the attributes into the span's config, so
// neither the attributes nor the option list are used once Start
// returned.
func (sc *spanScratch) start(t trace.Tracer, parent context.Context, name string, start time.Time, attrs []attribute.KeyValue, links []trace.Link) (context.Context, trace.Span) {
	opts := append(sc.opts[:0], spanKindServer, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if len(links) > 0 {
		opts = append(opts, trace.WithLinks(links...))
	}
	ctx, span := t.Start(parent, name, opts...)
	clear(attrs) // the pool pins no session id or address
	clear(opts)
	sc.attrs, sc.opts = attrs[:0], opts[:0]
	spanScratchPool.Put(sc)
	return ctx, span
}

// watchSession records mcp.server.session.duration when the legacy
// session that r initialized ends (pmcp.RequestHandlerExtra.OnSessionEnd
// runs the recording synchronously, before Serve returns or the DELETE is
// answered). Modern requests have no session.
func watchSession(h metric.Float64Histogram, start time.Time, r *pmcp.Request, res pmcp.Result) {
	a := appendNetwork(make([]attribute.KeyValue, 0, 4), r.Transport)
	if ir, ok := res.(*pmcp.InitializeResult); ok && ir.ProtocolVersion != "" {
		a = append(a, KeyProtocolVersion.String(ir.ProtocolVersion))
	}
	set := metric.WithAttributeSet(attribute.NewSet(a...))
	r.Extra.OnSessionEnd(func() {
		h.Record(context.Background(), time.Since(start).Seconds(), set)
	})
}

// NotificationMiddleware returns server notification middleware that
// wraps the handling of every incoming client notification in a SERVER
// span named after the method (parented like ServerMiddleware's) and
// records it in mcp.server.operation.duration.
func NotificationMiddleware(opts Options) pmcp.NotificationMiddleware {
	c := opts.resolve()
	hist := c.durationHistogram(MetricServerOperationDuration, "Duration of MCP requests as the server processes them.")
	ops := newOpCache(opts.OperationCacheSize, opts.MaxMetricTargets)
	return func(next pmcp.NotificationHandler) pmcp.NotificationHandler {
		return func(ctx context.Context, n *pmcp.Notification) (err error) {
			start := time.Now()
			parent, links := c.serverParent(ctx, metaOf(n.Params), n.Header)
			key := serverOpKey(n.Method, "", "", n.Transport)
			key.methodOther = !knownNotifications[n.Method]
			op := ops.get(key)
			scratch := spanScratchPool.Get().(*spanScratch)
			sattrs := append(scratch.attrs[:0], op.attrs...)
			if n.SessionID != "" {
				sattrs = append(sattrs, KeySessionID.String(n.SessionID))
			}
			sattrs = appendClientAddr(sattrs, n.Transport.RemoteAddr)
			spanCtx, span := scratch.start(c.tracer, parent, op.spanName, start, sattrs, links)
			finished := false
			defer func() {
				if !finished {
					outcome{errorType: "-32603", statusCode: "-32603", message: "panic"}.end(span, nil)
				}
			}()
			err = next(spanCtx, n)
			finished = true
			o := serverOutcome(nil, err)
			o.end(span, err)
			hist.Record(ctx, time.Since(start).Seconds(), op.record(o)...)
			return err
		}
	}
}

// serverParent returns the context to start a server span in, and the
// links it gets. Precedence: the trace context in _meta, then the span
// already in ctx, then the HTTP headers. A _meta parent links to the HTTP
// span (ambient or from the headers): one MCP request may cross several
// HTTP requests and one HTTP stream may carry several MCP messages.
func (c *config) serverParent(ctx context.Context, meta jsontext.Value, header http.Header) (context.Context, []trace.Link) {
	base := ctx
	httpSC := trace.SpanContextFromContext(ctx)
	if !httpSC.IsValid() && c.useHeaders && c.hasPropagationHeader(header) {
		base = c.prop.Extract(ctx, propagation.HeaderCarrier(header))
		httpSC = trace.SpanContextFromContext(base)
	}
	if len(meta) == 0 || !mentionsAny(meta, c.fields) {
		return base, nil
	}
	mc := MetaCarrierFromMeta(meta, c.fields)
	if len(mc) == 0 {
		return base, nil
	}
	out := c.prop.Extract(base, mc)
	sc := trace.SpanContextFromContext(out)
	if !sc.IsValid() || sc.Equal(httpSC) || !httpSC.IsValid() {
		return out, nil
	}
	return out, []trace.Link{{SpanContext: httpSC}}
}

// hasPropagationHeader reports whether header has any of the
// propagator's fields. Most requests carry no trace context, and
// extracting from a header without any costs a canonicalised lookup and
// an allocation per field.
func (c *config) hasPropagationHeader(header http.Header) bool {
	if len(header) == 0 {
		return false
	}
	for _, k := range c.headerKeys {
		if _, ok := header[k]; ok {
			return true
		}
	}
	return false
}

// spanName is "{method} {target}" for tools/call and prompts/get, the
// method otherwise.
func spanName(method, name string) string {
	if name != "" && (method == pmcp.MethodToolsCall || method == pmcp.MethodPromptsGet) {
		return method + " " + name
	}
	return method
}

// operationAttrs appends the attributes spans and the duration histograms
// share: none of them is per request (no ids), so metric cardinality
// stays bounded by methods, tools, prompts and resources.
func operationAttrs(a []attribute.KeyValue, method, name, protocolVersion string, ti pmcp.TransportInfo) []attribute.KeyValue {
	a = append(a, KeyMethodName.String(method))
	a = appendTarget(a, method, name)
	if protocolVersion != "" {
		a = append(a, KeyProtocolVersion.String(protocolVersion))
	}
	return appendNetwork(a, ti)
}

// appendNetwork appends the network.* attributes of a transport.
func appendNetwork(a []attribute.KeyValue, ti pmcp.TransportInfo) []attribute.KeyValue {
	if ti.Network != "" {
		a = append(a, KeyNetworkTransport.String(ti.Network))
	}
	if ti.Protocol != "" {
		a = append(a, KeyNetworkProtocolName.String(ti.Protocol))
		if ti.ProtocolVersion != "" {
			a = append(a, KeyNetworkProtocolVersion.String(ti.ProtocolVersion))
		}
	}
	return a
}

// appendTarget appends the tool, prompt or resource attribute of method.
func appendTarget(a []attribute.KeyValue, method, name string) []attribute.KeyValue {
	if name == "" {
		return a
	}
	switch pmcp.TargetOf(method) {
	case pmcp.TargetTool:
		a = append(a, KeyToolName.String(name), KeyOperationName.String(OperationExecuteTool))
	case pmcp.TargetPrompt:
		a = append(a, KeyPromptName.String(name))
	case pmcp.TargetResource:
		a = append(a, KeyResourceURI.String(name))
	}
	return a
}

// appendClientAddr appends client.address and client.port of an HTTP
// peer address.
func appendClientAddr(a []attribute.KeyValue, remote string) []attribute.KeyValue {
	return appendHostPort(a, KeyClientAddress, KeyClientPort, remote)
}

// appendHostPort appends the host and port of hostport ("host:port" or a
// bare host) under the given keys.
func appendHostPort(a []attribute.KeyValue, hostKey, portKey attribute.Key, hostport string) []attribute.KeyValue {
	if hostport == "" {
		return a
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return append(a, hostKey.String(hostport))
	}
	a = append(a, hostKey.String(host))
	if p, err := strconv.Atoi(port); err == nil {
		a = append(a, portKey.Int(p))
	}
	return a
}

// idString is the string form of a JSON-RPC id.
func idString(id jsonrpc.ID) string {
	if s, ok := id.Str(); ok {
		return s
	}
	n, _ := id.Int64()
	return strconv.FormatInt(n, 10)
}

// metaOf returns the raw _meta member of a params object, nil if absent.
func metaOf(params jsontext.Value) jsontext.Value {
	if len(params) == 0 || params.Kind() != '{' {
		return nil
	}
	dec := jsontext.NewDecoder(bytesReader(params))
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		if name.String() == "_meta" {
			v, err := dec.ReadValue()
			if err != nil || v.Kind() != '{' {
				return nil
			}
			return v.Clone()
		}
		if err := dec.SkipValue(); err != nil {
			return nil
		}
	}
	return nil
}
