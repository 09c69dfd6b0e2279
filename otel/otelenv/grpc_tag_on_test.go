//go:build pmcp_otlpgrpc

package otelenv_test

import (
	"context"
	"io"
	"testing"

	"github.com/gopmcp/pmcp/otel/otelenv"
)

// With -tags pmcp_otlpgrpc, OTEL_EXPORTER_OTLP_PROTOCOL=grpc selects the
// OTLP/gRPC exporters (they connect lazily: with no span recorded no
// collector is needed here).
func TestGRPCWithBuildTag(t *testing.T) {
	vars := map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars), Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
