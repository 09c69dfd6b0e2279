//go:build !pmcp_otlpgrpc

// Without the pmcp_otlpgrpc tag there is no OTLP/gRPC exporter: gRPC stays
// out of the default build.

package otelenv

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func grpcSpanExporter(context.Context) (sdktrace.SpanExporter, error) {
	return nil, fmt.Errorf("traces: %w", ErrGRPCNotBuilt)
}

func grpcMetricExporter(context.Context) (sdkmetric.Exporter, error) {
	return nil, fmt.Errorf("metrics: %w", ErrGRPCNotBuilt)
}
