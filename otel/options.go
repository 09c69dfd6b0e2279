package otel

import (
	"net/textproto"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configures the instrumentation. The zero value uses the global
// providers of go.opentelemetry.io/otel.
type Options struct {
	// TracerProvider creates the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider creates the duration histograms. Nil means
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator reads and writes trace context in params._meta and in
	// HTTP headers. Nil means otel.GetTextMapPropagator(), or W3C
	// TraceContext plus Baggage when no global propagator was set (the
	// MCP conventions carry traceparent, tracestate and baggage in _meta).
	Propagator propagation.TextMapPropagator
	// NoHTTPHeaders turns off trace-context headers on Streamable HTTP:
	// clients then send it in _meta only and servers read _meta only. By
	// default clients send both (servers and gateways that read headers
	// only still join the trace) and servers fall back to the headers
	// when _meta carries no traceparent.
	NoHTTPHeaders bool
	// OperationCacheSize bounds how many operations (method, target,
	// protocol version, transport) a middleware keeps its span name and
	// histogram attribute sets precomputed for; when full it starts over.
	// Zero means DefaultOperationCacheSize; negative turns the cache off
	// (everything is computed per request).
	OperationCacheSize int
	// MaxMetricTargets bounds how many distinct tool names, prompt names
	// and resource URIs each middleware's duration histogram records;
	// beyond it they are recorded as TargetOther. On the server a name is
	// recorded only when it names something registered
	// (pmcp.Request.NameRegistered), and a notification method only when
	// the protocol defines it: names a peer makes up are TargetOther
	// whatever this bound. Spans always carry the name (cut to 256
	// bytes). Zero means DefaultMaxMetricTargets; negative records every
	// target as TargetOther.
	MaxMetricTargets int
}

// config is Options resolved once, when a middleware is built.
type config struct {
	tracer     trace.Tracer
	meter      metric.Meter
	prop       propagation.TextMapPropagator
	fields     []string
	headerKeys []string // fields as canonical HTTP header keys
	useHeaders bool
}

func (o Options) resolve() *config {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	prop := o.Propagator
	if prop == nil {
		prop = otel.GetTextMapPropagator()
		if len(prop.Fields()) == 0 {
			prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	fields := prop.Fields()
	headerKeys := make([]string, len(fields))
	for i, f := range fields {
		headerKeys[i] = textproto.CanonicalMIMEHeaderKey(f)
	}
	return &config{
		tracer:     tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(version)),
		meter:      mp.Meter(instrumentationName, metric.WithInstrumentationVersion(version)),
		prop:       prop,
		fields:     fields,
		headerKeys: headerKeys,
		useHeaders: !o.NoHTTPHeaders,
	}
}

// version is the instrumentation scope version.
const version = "0.1.0"

// durationHistogram creates one of the duration histograms. An error (a
// misconfigured SDK) is reported to otel.Handle and a no-op histogram is
// used: instrumentation never stops the server.
func (c *config) durationHistogram(name, desc string) metric.Float64Histogram {
	h, err := c.meter.Float64Histogram(name,
		metric.WithUnit("s"),
		metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(DurationBuckets()...))
	if err != nil {
		otel.Handle(err)
	}
	if h == nil {
		h = noop.Float64Histogram{}
	}
	return h
}
