package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// stdioShutdownGrace bounds how long `serve --stdio` waits after a signal.
const stdioShutdownGrace = 2 * time.Second

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flagSet("serve", stderr)
	useStdio := fs.Bool("stdio", false, "serve over stdin/stdout instead of HTTP")
	addr := fs.String("http", "127.0.0.1:8080", "HTTP listen address")
	path := fs.String("path", "/mcp", "HTTP endpoint path")
	logLevel := fs.String("log-level", "info", "diagnostics and access log level on stderr: debug, info (one record per request), warn, error, off")
	logFormat := fs.String("log-format", "text", "log record format on stderr: text or json")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics on a separate listener (loopback only; traces and metrics also go where the OTEL_* variables say)")
	metricsRemote := fs.Bool("metrics-remote", false, "allow --metrics on a non-loopback address")
	replica := addReplicaFlags(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "pmcp: %v\n", err)
		return exitUsage
	}
	diag := logger
	if diag == nil {
		diag = slog.New(slog.DiscardHandler)
	}
	tel, err := startTelemetry(ctx, *metricsAddr, *metricsRemote, stderr, diag)
	if err != nil {
		fmt.Fprintf(stderr, "pmcp: %v\n", err)
		return exitUsage
	}
	defer tel.close()
	sopts := pmcp.ServerOptions{Logger: logger}
	tel.instrument(&sopts)
	var hopts pmcp.StreamableHTTPOptions
	rs, err := replica.setup(ctx, *addr, *path, &sopts, &hopts, diag)
	if err != nil {
		fmt.Fprintf(stderr, "pmcp: %v\n", err)
		if errors.As(err, new(usageError)) {
			return exitUsage
		}
		return exitError
	}
	defer rs.close()
	srv, err := everything.New(everything.Options{Server: sopts})
	if err != nil {
		fmt.Fprintf(stderr, "pmcp: %v\n", err)
		return exitError
	}
	if *useStdio {
		// stdout carries protocol messages only; diagnostics go to stderr.
		st := stdio.NewStream(stdin, stdout, stdio.Options{})
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, st) }()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			// A blocking read on a terminal or pipe cannot be interrupted;
			// give in-flight requests a moment, then exit regardless.
			t := time.NewTimer(stdioShutdownGrace)
			select {
			case err = <-done:
			case <-t.C:
				err = ctx.Err()
			}
			t.Stop()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "pmcp: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return serveHTTP(ctx, srv, hopts, *addr, *path, logger, stderr)
}
