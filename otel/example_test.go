package otel_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/transport/memory"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// addServer returns a server with one tool, instrumented with opts. With
// show, the tool prints whether the request carried trace context.
func addServer(opts pmcpotel.Options, show bool) *pmcp.Server {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{
		Name:       "calc",
		Middleware: []pmcp.Middleware{pmcpotel.ServerMiddleware(opts)},
	})
	if err != nil {
		log.Fatal(err)
	}
	type in struct{ A, B int }
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "add"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, v in) (int, error) {
		if tc, ok := extra.TraceContext(); show {
			fmt.Println("traceparent in _meta:", ok && tc.TraceParent != "")
		}
		return v.A + v.B, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// callAdd connects an instrumented client over an in-memory pipe and
// calls the tool once.
func callAdd(srv *pmcp.Server, opts pmcpotel.Options) {
	a, b := memory.NewPipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), a) }()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{
		Era:        pmcp.EraModern,
		Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(opts)},
	}).Connect(context.Background(), b)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), "add", map[string]int{"A": 2, "B": 3}); err != nil {
		log.Fatal(err)
	}
	_ = cs.Close()
	<-done
}

// Tracing a client and a server: the client's span travels in the
// request's _meta, and the server's span joins the same trace.
func ExampleServerMiddleware() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	opts := pmcpotel.Options{TracerProvider: tp}

	callAdd(addServer(opts, true), opts)

	var traces []trace.TraceID
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call add" {
			fmt.Println(s.SpanKind(), s.Name())
			traces = append(traces, s.SpanContext().TraceID())
		}
	}
	fmt.Println("one trace:", len(traces) == 2 && traces[0] == traces[1])
	// Output:
	// traceparent in _meta: true
	// server tools/call add
	// client tools/call add
	// one trace: true
}

// The duration histograms are in seconds, with the bucket boundaries the
// MCP conventions recommend.
func ExampleDurationBuckets() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	opts := pmcpotel.Options{MeterProvider: mp}

	callAdd(addServer(opts, false), opts)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		h := m.Data.(metricdata.Histogram[float64])
		names = append(names, fmt.Sprintf("%s (%s) buckets ok: %v", m.Name, m.Unit,
			slices.Equal(h.DataPoints[0].Bounds, pmcpotel.DurationBuckets())))
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// mcp.client.operation.duration (s) buckets ok: true
	// mcp.server.operation.duration (s) buckets ok: true
}

// MetaCarrier lets any OpenTelemetry propagator read and write the trace
// context that MCP carries in params._meta.
func ExampleMetaCarrier() {
	prop := propagation.TraceContext{}
	meta := jsontext.Value(`{"progressToken":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)

	ctx := prop.Extract(context.Background(), pmcpotel.MetaCarrierFromMeta(meta, prop.Fields()))
	sc := trace.SpanContextFromContext(ctx)
	fmt.Println("trace:", sc.TraceID(), "remote:", sc.IsRemote())

	out := pmcpotel.MetaCarrier{}
	prop.Inject(ctx, out)
	fmt.Println("traceparent:", out.Get("traceparent"))
	// Output:
	// trace: 0af7651916cd43dd8448eb211c80319c remote: true
	// traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01
}
