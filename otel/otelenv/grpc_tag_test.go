//go:build !pmcp_otlpgrpc

package otelenv_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp/otel/otelenv"
)

// Without the pmcp_otlpgrpc build tag there is no OTLP/gRPC exporter (the
// default build links no gRPC): asking for it is an error that says how to
// get it, for either signal and either variable.
func TestGRPCNeedsBuildTag(t *testing.T) {
	for _, vars := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
		{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"},
	} {
		tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars), Console: io.Discard})
		if err == nil {
			_ = tel.Shutdown(context.Background())
			t.Errorf("%v: no error", vars)
			continue
		}
		if !errors.Is(err, otelenv.ErrGRPCNotBuilt) || !errors.Is(err, otelenv.ErrUnsupported) {
			t.Errorf("%v: err = %v, want ErrGRPCNotBuilt (an ErrUnsupported)", vars, err)
		}
		for _, want := range []string{"-tags pmcp_otlpgrpc", "http/protobuf"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %q does not say %q", vars, err, want)
			}
		}
	}
}
