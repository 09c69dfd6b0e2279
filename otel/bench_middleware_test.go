package otel_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkServerMiddleware is the server middleware alone around a
// handler that returns a ready result: the requests are shaped like the
// bench features leg's tools/call over Streamable HTTP (legacy: session
// id, no _meta; modern: the per-request _meta, no session), with the real
// SDK (every span sampled, recorded and ended into a no-op exporter; the
// histograms record into a manual reader). "simple" hands each span to
// the exporter synchronously (SimpleSpanProcessor), "batch" queues it
// (the batch span processor production setups use); "off" is the bare
// handler call, "traceparent" adds a W3C parent in _meta. cpu-ns/op is
// the process's CPU time per call (the batch processor's goroutine and
// the garbage collector included), steadier than ns/op on a shared
// machine.
func BenchmarkServerMiddleware(b *testing.B) {
	res := &pmcp.CallToolResult{Content: []pmcp.Content{&pmcp.TextContent{Text: "hello"}}}
	handler := func(context.Context, *pmcp.Request) (pmcp.Result, error) { return res, nil }
	header := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Content-Length": {"120"}}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = []string{kv[i+1]}
		}
		return h
	}
	ti := pmcp.TransportInfo{Name: pmcp.TransportHTTP, Network: "tcp", Protocol: "http", ProtocolVersion: "1.1", RemoteAddr: "127.0.0.1:41234"}
	modernMeta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench-load","version":"1.0.0"}`
	requests := map[string]*pmcp.Request{
		"legacy": {
			Method: pmcp.MethodToolsCall, Name: "echo", ID: jsonrpc.Int64ID(7), Transport: ti,
			Header: header("Mcp-Session-Id", "b3f1c2d4e5f60718293a4b5c6d7e8f90", "Mcp-Protocol-Version", "2025-11-25"),
			Extra: &pmcp.RequestHandlerExtra{SessionID: "b3f1c2d4e5f60718293a4b5c6d7e8f90",
				ProtocolContext: &pmcp.ProtocolContext{Era: pmcp.EraLegacy, ProtocolVersion: "2025-11-25"}},
		},
		"modern": {
			Method: pmcp.MethodToolsCall, Name: "echo", ID: jsonrpc.Int64ID(7), Transport: ti,
			Header: header("Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo"),
			Extra: &pmcp.RequestHandlerExtra{RequestMeta: jsontext.Value(modernMeta + `}`),
				ProtocolContext: &pmcp.ProtocolContext{Era: pmcp.EraModern, ProtocolVersion: "2026-07-28"}},
		},
		"traceparent": {
			Method: pmcp.MethodToolsCall, Name: "echo", ID: jsonrpc.Int64ID(7), Transport: ti,
			Header: header("Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo"),
			Extra: &pmcp.RequestHandlerExtra{RequestMeta: jsontext.Value(modernMeta + `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`),
				ProtocolContext: &pmcp.ProtocolContext{Era: pmcp.EraModern, ProtocolVersion: "2026-07-28"}},
		},
	}
	run := func(b *testing.B, h pmcp.MethodHandler, r *pmcp.Request) {
		ctx := context.Background()
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if _, err := h(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		if cpu > 0 {
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		}
	}
	for _, name := range []string{"legacy", "modern"} {
		b.Run("off/"+name, func(b *testing.B) { run(b, handler, requests[name]) })
	}
	for _, proc := range []string{"simple", "batch"} {
		for _, name := range []string{"legacy", "modern", "traceparent"} {
			b.Run(proc+"/"+name, func(b *testing.B) {
				sp := sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())
				if proc == "batch" {
					sp = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(sp))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(context.Background())
				defer mp.Shutdown(context.Background())
				mw := pmcpotel.ServerMiddleware(pmcpotel.Options{TracerProvider: tp, MeterProvider: mp})
				run(b, mw(handler), requests[name])
			})
		}
	}
}
