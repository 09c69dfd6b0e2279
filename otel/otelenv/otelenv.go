// Package otelenv sets up OpenTelemetry exporters the way the standard
// OTEL_* environment variables ask, for programs such as `pmcp serve`:
// traces and metrics to OTLP (http/protobuf; grpc with a build tag) or to a console
// writer, or nowhere, and an optional Prometheus text endpoint.
//
// Nothing is exported unless asked: an unset OTEL_TRACES_EXPORTER or
// OTEL_METRICS_EXPORTER means "none" here (the OpenTelemetry specification
// defaults to "otlp"; a local tool should not dial a collector nobody
// configured).
//
// Variables read here: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER,
// OTEL_METRICS_EXPORTER (comma-separated lists of otlp, console, none),
// OTEL_EXPORTER_OTLP_PROTOCOL and its _TRACES_/_METRICS_ variants
// (http/protobuf, the default, or grpc: only in a build with the
// pmcp_otlpgrpc tag, see ErrGRPCNotBuilt), OTEL_PROPAGATORS (tracecontext,
// baggage, none), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; for
// OTLP/HTTP, OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY and their
// per-signal forms, OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE and
// OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION (all through
// Options.Getenv). The SDK reads the rest itself from the process
// environment: OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*,
// OTEL_METRIC_EXPORT_INTERVAL, and the gRPC exporters their
// OTEL_EXPORTER_OTLP_* variables.
//
// The OTLP/HTTP exporters are this package's own (protobuf encoded with
// google.golang.org/protobuf/encoding/protowire): the upstream otlptracehttp
// and otlpmetrichttp modules import gRPC, which a program that only
// speaks HTTP should not have to download and link.
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	pmcpotel "github.com/gopmcp/pmcp/otel"
)

// Options configures Setup. The zero value reads the process environment
// and writes console output to os.Stderr.
type Options struct {
	// Getenv looks variables up. Nil means os.Getenv.
	Getenv func(string) string
	// Console receives the console exporters' output. Nil means os.Stderr
	// (never stdout: a stdio MCP server's stdout carries the protocol).
	Console io.Writer
	// ServiceName is service.name when OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES do not set one. Empty means "pmcp".
	ServiceName string
	// Prometheus adds a Prometheus reader to the meter provider, whatever
	// OTEL_METRICS_EXPORTER says; Telemetry.PrometheusHandler serves it,
	// with the Go runtime (go_*) and process (process_*) metrics of the
	// Prometheus client's collectors.
	Prometheus bool
}

// Telemetry holds the providers Setup made. Pass them to
// github.com/gopmcp/pmcp/otel.Options (see Instrumentation) and call
// Shutdown before exiting so that buffered spans and metrics are flushed.
type Telemetry struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator

	shutdown []func(context.Context) error
	prom     http.Handler
}

// Instrumentation returns the options for the pmcp OpenTelemetry
// middleware that use t's providers.
func (t *Telemetry) Instrumentation() pmcpotel.Options {
	return pmcpotel.Options{TracerProvider: t.TracerProvider, MeterProvider: t.MeterProvider, Propagator: t.Propagator}
}

// Enabled reports whether anything is exported (traces, metrics or the
// Prometheus endpoint).
func (t *Telemetry) Enabled() bool { return len(t.shutdown) > 0 }

// PrometheusHandler serves the metrics in the Prometheus text format; nil
// unless Options.Prometheus was set.
func (t *Telemetry) PrometheusHandler() http.Handler { return t.prom }

// Shutdown flushes and stops the exporters. It is safe to call once.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		errs = append(errs, t.shutdown[i](ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

// ErrUnsupported is wrapped by Setup's error for a variable value it does
// not support.
var ErrUnsupported = errors.New("otelenv: unsupported value")

// ErrGRPCNotBuilt is Setup's error for OTEL_EXPORTER_OTLP_PROTOCOL=grpc
// (or a per-signal _PROTOCOL=grpc) in a build without the pmcp_otlpgrpc
// tag: the OTLP/gRPC exporters and gRPC itself are linked only with
// `go build -tags pmcp_otlpgrpc`. It wraps ErrUnsupported.
var ErrGRPCNotBuilt = fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs a build with -tags pmcp_otlpgrpc (go install -tags pmcp_otlpgrpc ./cmd/pmcp); unset it or set http/protobuf, the default", ErrUnsupported)

// Setup builds tracer and meter providers as the environment asks. On an
// error nothing is left running.
func Setup(ctx context.Context, opts Options) (*Telemetry, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	console := opts.Console
	if console == nil {
		console = os.Stderr
	}
	t := &Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	prop, err := propagators(getenv("OTEL_PROPAGATORS"))
	if err != nil {
		return nil, err
	}
	t.Propagator = prop
	disabled := strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true")
	traces, err := exporters("OTEL_TRACES_EXPORTER", getenv("OTEL_TRACES_EXPORTER"), disabled)
	if err != nil {
		return nil, err
	}
	metrics, err := exporters("OTEL_METRICS_EXPORTER", getenv("OTEL_METRICS_EXPORTER"), disabled)
	if err != nil {
		return nil, err
	}
	if len(traces) == 0 && len(metrics) == 0 && !opts.Prometheus {
		return t, nil
	}
	name := opts.ServiceName
	if name == "" {
		name = "pmcp"
	}
	res, err := newResource(ctx, getenv, name)
	if err != nil {
		return nil, fmt.Errorf("otelenv: resource: %w", err)
	}
	fail := func(err error) (*Telemetry, error) {
		_ = t.Shutdown(ctx)
		return nil, err
	}
	if len(traces) > 0 {
		tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
		for _, name := range traces {
			exp, err := spanExporter(ctx, getenv, name, signalProtocol(getenv, "TRACES"), console)
			if err != nil {
				return fail(err)
			}
			tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
		}
		tp := sdktrace.NewTracerProvider(tpOpts...)
		t.TracerProvider = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	if len(metrics) > 0 || opts.Prometheus {
		mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, name := range metrics {
			exp, err := metricExporter(ctx, getenv, name, signalProtocol(getenv, "METRICS"), console)
			if err != nil {
				return fail(err)
			}
			mpOpts = append(mpOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		}
		if opts.Prometheus {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
			if err != nil {
				return fail(fmt.Errorf("otelenv: prometheus exporter: %w", err))
			}
			mpOpts = append(mpOpts, sdkmetric.WithReader(exp))
			t.prom = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		}
		mp := sdkmetric.NewMeterProvider(mpOpts...)
		t.MeterProvider = mp
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	return t, nil
}

// exporters parses an OTEL_*_EXPORTER list; "none" and "" select nothing.
func exporters(key, v string, disabled bool) ([]string, error) {
	if disabled {
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(v, ",") {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "", "none":
		case "otlp", "console":
			out = append(out, name)
		default:
			return nil, fmt.Errorf("%w: %s=%q (want otlp, console or none)", ErrUnsupported, key, name)
		}
	}
	return out, nil
}

// signalProtocol returns the OTLP protocol of a signal (TRACES, METRICS).
func signalProtocol(getenv func(string) string, signal string) string {
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")); p != "" {
		return p
	}
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" {
		return p
	}
	return "http/protobuf"
}

func spanExporter(ctx context.Context, getenv func(string) string, name, protocol string, console io.Writer) (sdktrace.SpanExporter, error) {
	if name == "console" {
		return stdouttrace.New(stdouttrace.WithWriter(console))
	}
	switch protocol {
	case "http/protobuf":
		return newOTLPSpanExporter(getenv)
	case "grpc":
		return grpcSpanExporter(ctx)
	}
	return nil, fmt.Errorf("%w: OTLP protocol %q for traces (want http/protobuf or grpc)", ErrUnsupported, protocol)
}

func metricExporter(ctx context.Context, getenv func(string) string, name, protocol string, console io.Writer) (sdkmetric.Exporter, error) {
	if name == "console" {
		return stdoutmetric.New(stdoutmetric.WithWriter(console))
	}
	switch protocol {
	case "http/protobuf":
		return newOTLPMetricExporter(getenv)
	case "grpc":
		return grpcMetricExporter(ctx)
	}
	return nil, fmt.Errorf("%w: OTLP protocol %q for metrics (want http/protobuf or grpc)", ErrUnsupported, protocol)
}

// propagators parses OTEL_PROPAGATORS; empty means tracecontext,baggage.
func propagators(v string) (propagation.TextMapPropagator, error) {
	if strings.TrimSpace(v) == "" {
		v = "tracecontext,baggage"
	}
	var ps []propagation.TextMapPropagator
	for _, name := range strings.Split(v, ",") {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "none", "":
		default:
			return nil, fmt.Errorf("%w: OTEL_PROPAGATORS=%q (want tracecontext, baggage or none)", ErrUnsupported, name)
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...), nil
}
