package otel_test

import (
	"context"
	"testing"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/transport/memory"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkToolsCall is one tools/call from a pmcp.Client to a server over
// an in-memory pipe, without instrumentation, with the server
// instrumented, and with both sides instrumented (trace context written
// to and read from _meta). Every span is sampled and handed to a no-op
// exporter synchronously; the histograms record into a manual reader.
func BenchmarkToolsCall(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())
	opts := pmcpotel.Options{TracerProvider: tp, MeterProvider: mp}
	for _, cfg := range []struct {
		name   string
		server []pmcp.Middleware
		client []pmcp.ClientMiddleware
	}{
		{"off", nil, nil},
		{"server", []pmcp.Middleware{pmcpotel.ServerMiddleware(opts)}, nil},
		{"noop-client-middleware", nil, []pmcp.ClientMiddleware{func(next pmcp.ClientHandler) pmcp.ClientHandler { return next }}},
		{"client", nil, []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(opts)}},
		{"client+server", []pmcp.Middleware{pmcpotel.ServerMiddleware(opts)}, []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(opts)}},
	} {
		for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
			b.Run(cfg.name+"/"+era.String(), func(b *testing.B) {
				srv, err := pmcp.NewServer(pmcp.ServerOptions{Middleware: cfg.server})
				if err != nil {
					b.Fatal(err)
				}
				if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
					return in.Text, nil
				}); err != nil {
					b.Fatal(err)
				}
				a, c := memory.NewPipe()
				done := make(chan error, 1)
				go func() { done <- srv.Serve(context.Background(), a) }()
				cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, Middleware: cfg.client}).Connect(context.Background(), c)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				in := echoIn{Text: "hello"}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := cs.CallTool(ctx, "echo", in); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				_ = cs.Close()
				<-done
			})
		}
	}
}
