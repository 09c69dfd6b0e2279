package pmcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
)

// BenchmarkServeToolsCallPipeline is BenchmarkServeToolsCall with the
// request pipeline switched on step by step: no middleware (the baseline),
// the access log (JSON records to io.Discard), one no-op middleware, and
// both.
func BenchmarkServeToolsCallPipeline(b *testing.B) {
	noop := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) { return next(ctx, r) }
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, cfg := range []struct {
		name string
		opts ServerOptions
	}{
		{"none", ServerOptions{}},
		{"accesslog", ServerOptions{Logger: logger}},
		{"noop-middleware", ServerOptions{Middleware: []Middleware{noop}}},
		{"accesslog+noop", ServerOptions{Logger: logger, Middleware: []Middleware{noop}}},
	} {
		for _, era := range []struct{ name, req string }{{"legacy", benchEchoLegacy}, {"modern", benchEchoModern}} {
			b.Run(cfg.name+"/"+era.name, func(b *testing.B) {
				cfg.opts.Name, cfg.opts.Version = "bench", "1.0.0"
				s, err := NewServer(cfg.opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := AddTool(s, &Tool{Name: "echo", Description: "Echoes text."},
					func(_ context.Context, _ *RequestHandlerExtra, in benchEchoIn) (string, error) { return in.Text, nil }); err != nil {
					b.Fatal(err)
				}
				d, stop := serveDriver(b, s)
				defer stop()
				d.roundTrip([]byte(benchInitialize))
				d.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				line := []byte(era.req)
				d.roundTrip(line)
				if got := d.last(); !bytes.Contains(got, []byte(`"text":"hello"`)) {
					b.Fatalf("unexpected response %s", got)
				}
				b.ReportAllocs()
				for b.Loop() {
					d.roundTrip(line)
				}
			})
		}
	}
}
