package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/otel/otelenv"
	"github.com/gopmcp/pmcp/proxy"
)

// telemetryFlushTimeout bounds the final export of spans and metrics.
const telemetryFlushTimeout = 5 * time.Second

// errMetricsNotLoopback refuses a --metrics address another host could
// reach, unless --metrics-remote says so.
var errMetricsNotLoopback = errors.New("--metrics must listen on a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT); add --metrics-remote to listen elsewhere")

// telemetry is the OpenTelemetry wiring of `pmcp serve`: exporters from the
// OTEL_* variables, and the Prometheus listener of --metrics.
type telemetry struct {
	tel     *otelenv.Telemetry
	metrics *http.Server
	addr    net.Addr // the --metrics listener's address
	served  chan error
	logger  *slog.Logger
	// observed is the registration of observe's gauges and counters.
	observed interface{ Unregister() error }
}

// startTelemetry sets up exporters as the environment asks (console output
// goes to stderr: stdout may carry the protocol) and, when metricsAddr is
// set, serves Prometheus text at http://metricsAddr/metrics.
func startTelemetry(ctx context.Context, metricsAddr string, metricsRemote bool, stderr io.Writer, logger *slog.Logger) (*telemetry, error) {
	if metricsAddr != "" && !metricsRemote {
		if err := checkLoopback(metricsAddr); err != nil {
			return nil, err
		}
	}
	tel, err := otelenv.Setup(ctx, otelenv.Options{Console: stderr, ServiceName: "pmcp", Prometheus: metricsAddr != ""})
	if err != nil {
		return nil, err
	}
	t := &telemetry{tel: tel, logger: logger}
	if metricsAddr == "" {
		return t, nil
	}
	ln, err := net.Listen("tcp", metricsAddr)
	if err != nil {
		_ = tel.Shutdown(ctx)
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.PrometheusHandler())
	t.metrics = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	t.addr = ln.Addr()
	t.served = make(chan error, 1)
	go func() { t.served <- t.metrics.Serve(ln) }()
	logger.Info("pmcp: serving Prometheus metrics", "url", "http://"+t.addr.String()+"/metrics")
	return t, nil
}

// registerMetricsFlags defines --metrics and --metrics-remote (serve,
// bridge and gateway: startTelemetry's arguments).
func registerMetricsFlags(fs *flag.FlagSet, addr *string, remote *bool) {
	fs.StringVar(addr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics on a separate listener (loopback only; traces and metrics also go where the OTEL_* variables say)")
	fs.BoolVar(remote, "metrics-remote", false, "allow --metrics on a non-loopback address")
}

// checkLoopback accepts host:port whose host is a loopback IP or
// "localhost"; an empty host (all interfaces) is refused.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics: %w", err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errMetricsNotLoopback
}

// instrument adds the OpenTelemetry middleware to opts when anything is
// exported; otherwise the server runs without it (no cost).
func (t *telemetry) instrument(opts *pmcp.ServerOptions) {
	if !t.tel.Enabled() {
		return
	}
	o := t.tel.Instrumentation()
	// First, so that its span covers every other middleware.
	opts.Middleware = append([]pmcp.Middleware{pmcpotel.ServerMiddleware(o)}, opts.Middleware...)
	opts.NotificationMiddleware = append([]pmcp.NotificationMiddleware{pmcpotel.NotificationMiddleware(o)}, opts.NotificationMiddleware...)
}

// instrumentProxy is instrument for a bridge or gateway: its server gets
// the server middleware, and its upstream sessions the client middleware,
// so one downstream call is a server span with a client span per upstream
// hop under it, whose trace context goes upstream in _meta (and headers).
func (t *telemetry) instrumentProxy(opts *proxy.Options) {
	t.instrument(&opts.Server)
	if !t.tel.Enabled() {
		return
	}
	mw := pmcpotel.ClientMiddleware(t.tel.Instrumentation())
	// First, so that its span covers every other middleware's work.
	opts.Client.Middleware = append([]pmcp.ClientMiddleware{mw}, opts.Client.Middleware...)
}

// observe exports the operator metrics of srv and h (nil on stdio): the
// running tasks, sessions, listen streams and refusals by reason (see
// pmcpotel.ObserveServer), when anything is exported.
func (t *telemetry) observe(srv *pmcp.Server, h *pmcp.StreamableHTTPHandler) {
	if !t.tel.Enabled() {
		return
	}
	reg, err := pmcpotel.ObserveServer(t.tel.Instrumentation(), srv, h)
	if err != nil {
		t.logger.Warn("pmcp: cannot register the operator metrics", "error", err)
		return
	}
	t.observed = reg
}

// close stops the metrics listener and flushes the exporters.
func (t *telemetry) close() {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if t.observed != nil {
		_ = t.observed.Unregister()
	}
	if t.metrics != nil {
		_ = t.metrics.Shutdown(ctx)
		if err := <-t.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.logger.Warn("pmcp: metrics listener failed", "error", err)
		}
	}
	if err := t.tel.Shutdown(ctx); err != nil {
		t.logger.Warn("pmcp: flushing telemetry failed", "error", err)
	}
}
