package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// stdioShutdownGrace bounds how long `serve --stdio` waits after a signal.
const stdioShutdownGrace = 2 * time.Second

// serveFlags are the flags of `pmcp serve`.
type serveFlags struct {
	stdio         bool
	addr, path    string
	logFormat     string
	metricsAddr   string
	metricsRemote bool
	sec           serveSecurity
	replica       *replicaFlags
}

func serveVerb() (*verb, *serveFlags) {
	v := newVerb("serve", "pmcp serve [--stdio | --http ADDR] [flags]",
		"Run the everything server (every MCP feature, both protocol eras) over\nStreamable HTTP, or over stdin/stdout with --stdio.")
	f := &serveFlags{}
	fs := v.fs
	fs.BoolVar(&f.stdio, "stdio", false, "serve over stdin/stdout instead of HTTP")
	fs.StringVar(&f.addr, "http", "127.0.0.1:8080", "HTTP listen address")
	fs.StringVar(&f.path, "path", "/mcp", "HTTP endpoint path")
	fs.StringVar(&f.logFormat, "log-format", "text", "log record format on stderr: text or json")
	registerMetricsFlags(fs, &f.metricsAddr, &f.metricsRemote)
	f.sec.register(fs)
	f.replica = addReplicaFlags(fs)
	return v, f
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	v, f := serveVerb()
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 || tail != nil {
		return v.usageError(stderr, fmt.Errorf("unexpected argument %q", append(pos, tail...)))
	}
	sec, replica := &f.sec, f.replica
	useStdio, metricsAddr, metricsRemote := &f.stdio, &f.metricsAddr, &f.metricsRemote
	addr, path := &f.addr, &f.path
	if err := sec.check(); err != nil {
		return v.usageError(stderr, err)
	}
	if *useStdio && (sec.issuer != "" || len(sec.allowHosts) > 0) {
		return v.usageError(stderr, errors.New("--auth-* and --allow-host apply to HTTP only (stdio takes credentials from its environment)"))
	}
	logger, err := v.logLevel.logger(stderr, f.logFormat)
	if err != nil {
		return v.usageError(stderr, err)
	}
	diag := logger
	if diag == nil {
		diag = slog.New(slog.DiscardHandler)
	}
	tel, err := startTelemetry(ctx, *metricsAddr, *metricsRemote, stderr, diag)
	if err != nil {
		return v.usageError(stderr, err)
	}
	defer tel.close()
	sopts := pmcp.ServerOptions{Logger: logger}
	tel.instrument(&sopts)
	var hopts pmcp.StreamableHTTPOptions
	rs, err := replica.setup(ctx, *addr, *path, &sopts, &hopts, diag)
	if err != nil {
		if errors.As(err, new(usageError)) {
			return v.usageError(stderr, err)
		}
		return v.fail(stderr, exitError, err)
	}
	defer rs.close()
	srv, err := everything.New(everything.Options{Server: sopts})
	if err != nil {
		return v.fail(stderr, exitError, err)
	}
	defer srv.Close()
	if *useStdio {
		// stdout carries protocol messages only; diagnostics go to stderr.
		tel.observe(srv, nil)
		if err := serveStdio(ctx, srv, stdin, stdout); err != nil {
			return v.fail(stderr, exitError, err)
		}
		return exitOK
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return serveHTTP(ctx, srv, hopts, *addr, *path, sec, logger, stderr, func(h *pmcp.StreamableHTTPHandler) { tel.observe(srv, h) })
}

// serveStdio serves srv over stdin/stdout until the input ends or ctx is
// done (SIGINT/SIGTERM). The process's standard input, when a pipe or
// socket, is read through the poller and the read ends with ctx; a
// blocking read (a terminal, or another reader) cannot be interrupted, so
// after ctx ends in-flight requests get stdioShutdownGrace, then it
// returns regardless. A cancelled ctx is a clean end (nil).
func serveStdio(ctx context.Context, srv *pmcp.Server, stdin io.Reader, stdout io.Writer) error {
	var st *stdio.Stream
	if stdin == io.Reader(os.Stdin) && stdout == io.Writer(os.Stdout) {
		// The process's own standard streams: stdio.Stdio reads a pipe
		// through the runtime's poller, so a waiting read parks a
		// goroutine instead of a thread, and ctx interrupts it.
		st = stdio.Stdio(stdio.Options{})
	} else {
		st = stdio.NewStream(stdin, stdout, stdio.Options{})
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, st) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t := time.NewTimer(stdioShutdownGrace)
		select {
		case err = <-done:
		case <-t.C:
			err = ctx.Err()
		}
		t.Stop()
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
