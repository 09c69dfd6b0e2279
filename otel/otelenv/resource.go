package otelenv

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// newResource describes the process: OTEL_RESOURCE_ATTRIBUTES
// (key=value,... with percent-encoded values), then OTEL_SERVICE_NAME,
// then defaultName for service.name, and the SDK's telemetry.sdk.*.
func newResource(ctx context.Context, getenv func(string) string, defaultName string) (*resource.Resource, error) {
	var attrs []attribute.KeyValue
	name := defaultName
	if v := strings.TrimSpace(getenv("OTEL_RESOURCE_ATTRIBUTES")); v != "" {
		for _, pair := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES member %q is not key=value", ErrUnsupported, pair)
			}
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES value of %q: %v", ErrUnsupported, k, err)
			}
			if k == "service.name" {
				name = dec
				continue
			}
			attrs = append(attrs, attribute.String(k, dec))
		}
	}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		name = v
	}
	attrs = append(attrs, attribute.String("service.name", name))
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
}
