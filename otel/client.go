package otel

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ClientMiddleware returns client middleware that wraps every request a
// pmcp.ClientSession sends in a CLIENT span named like the server's
// ("tools/call get_weather"), records mcp.client.operation.duration, and
// writes the span's trace context (traceparent, tracestate, baggage as the
// propagator makes them) into the request's params._meta, and, on
// Streamable HTTP, into the POST's headers as well (see
// Options.NoHTTPHeaders). A server running ServerMiddleware then parents
// its span on the client's, so one trace crosses client, server and the
// calls the server's handlers make with the handler's context.
//
// Every JSON-RPC error is a failure on the client (error.type and
// rpc.response.status_code are its code); a deadline is "timeout", other
// transport failures "_OTHER"; a tool result with isError set is
// "tool_error".
//
// Requests the server sends to the client (sampling, elicitation, roots)
// get a SERVER span parented on the trace context in their _meta, if any.
func ClientMiddleware(opts Options) pmcp.ClientMiddleware {
	c := opts.resolve()
	hist := c.durationHistogram(MetricClientOperationDuration, "Duration of MCP requests as the client sees them, from send to response.")
	ops := newOpCache(opts.OperationCacheSize, opts.MaxMetricTargets)
	return func(next pmcp.ClientHandler) pmcp.ClientHandler {
		return func(ctx context.Context, r *pmcp.ClientRequest) (jsontext.Value, error) {
			if r.Incoming {
				return c.incoming(ctx, r, next)
			}
			start := time.Now()
			pv, ti := "", pmcp.TransportInfo{}
			if r.Session != nil {
				pv, ti = r.Session.ProtocolVersion(), r.Session.Transport()
			}
			op := ops.get(clientOpKey(r.Method, r.Name, pv, ti))
			sattrs := op.attrs
			if r.Session != nil && r.Session.Era() == pmcp.EraLegacy {
				if id := r.Session.SessionID(); id != "" {
					sattrs = append(make([]attribute.KeyValue, 0, len(op.attrs)+1), op.attrs...)
					sattrs = append(sattrs, KeySessionID.String(id))
				}
			}
			spanCtx, span := c.tracer.Start(ctx, op.spanName, spanKindClient, trace.WithTimestamp(start), trace.WithAttributes(sattrs...))
			c.inject(spanCtx, r)
			finished := false
			defer func() {
				if !finished {
					outcome{errorType: ErrorTypeOther, message: "panic"}.end(span, nil)
				}
			}()
			raw, err := next(spanCtx, r)
			finished = true
			if r.ID.IsValid() {
				span.SetAttributes(KeyJSONRPCRequestID.String(idString(r.ID)))
			}
			o := clientOutcome(err == nil && r.Method == pmcp.MethodToolsCall && resultIsError(raw), err)
			o.end(span, err)
			hist.Record(ctx, time.Since(start).Seconds(), op.record(o)...)
			return raw, err
		}
	}
}

var spanKindClient = trace.WithSpanKind(trace.SpanKindClient)

// inject writes the trace context of ctx into r's _meta and HTTP headers.
func (c *config) inject(ctx context.Context, r *pmcp.ClientRequest) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	mc := MetaCarrier{}
	c.prop.Inject(ctx, mc)
	for _, k := range mc.Keys() {
		if err := r.SetMeta(k, mc[k]); err != nil {
			otel.Handle(err)
			return
		}
	}
	if c.useHeaders && r.Session != nil && r.Session.Transport().Name == pmcp.TransportHTTP {
		if r.Header == nil {
			r.Header = make(http.Header, len(mc))
		}
		c.prop.Inject(ctx, propagation.HeaderCarrier(r.Header))
	}
}

// incoming wraps a request the server sent to the client.
func (c *config) incoming(ctx context.Context, r *pmcp.ClientRequest, next pmcp.ClientHandler) (jsontext.Value, error) {
	start := time.Now()
	parent, _ := c.serverParent(ctx, metaOf(r.Params), nil)
	pv, ti := "", pmcp.TransportInfo{}
	if r.Session != nil {
		pv, ti = r.Session.ProtocolVersion(), r.Session.Transport()
	}
	attrs := operationAttrs(make([]attribute.KeyValue, 0, 10), r.Method, "", pv, ti)
	if r.ID.IsValid() {
		attrs = append(attrs, KeyJSONRPCRequestID.String(idString(r.ID)))
	}
	spanCtx, span := c.tracer.Start(parent, r.Method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(start),
		trace.WithAttributes(attrs...))
	finished := false
	defer func() {
		if !finished {
			outcome{errorType: "-32603", statusCode: "-32603", message: "panic"}.end(span, nil)
		}
	}()
	raw, err := next(spanCtx, r)
	finished = true
	serverOutcome(nil, err).end(span, err)
	return raw, err
}

// resultIsError reports whether a raw tools/call result has isError set.
func resultIsError(raw jsontext.Value) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	// Most results have no isError member: skip decoding them.
	return bytes.Contains(raw, []byte(`"isError"`)) && json.Unmarshal(raw, &r) == nil && r.IsError
}
