package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
)

// HTTP server settings of `pmcp serve`. There is deliberately no
// WriteTimeout or ReadTimeout: either would cut long-lived SSE streams
// (the handler bounds body reads and each write itself).
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpIdleTimeout       = 2 * time.Minute
	httpMaxHeaderBytes    = 64 << 10
	httpShutdownGrace     = 5 * time.Second
)

// serveHTTP serves srv over Streamable HTTP at addr and path until ctx is
// done (SIGINT/SIGTERM), then shuts down gracefully. observe, when not
// nil, is given the handler before it serves (the --metrics gauges).
func serveHTTP(ctx context.Context, srv *pmcp.Server, hopts pmcp.StreamableHTTPOptions, addr, path string, sec *serveSecurity, logger *slog.Logger, stderr io.Writer, observe func(*pmcp.StreamableHTTPHandler)) int {
	return serveHTTPWith(ctx, srv, hopts, addr, path, sec, logger, stderr, nil, observe)
}

// serveHTTPWith is serveHTTP with more routes: mount, when not nil, adds
// them to the listener's mux (the bridge's /healthz and /readyz).
func serveHTTPWith(ctx context.Context, srv *pmcp.Server, hopts pmcp.StreamableHTTPOptions, addr, path string, sec *serveSecurity, logger *slog.Logger, stderr io.Writer, mount func(*http.ServeMux), observe func(*pmcp.StreamableHTTPHandler)) int {
	if !strings.HasPrefix(path, "/") {
		fmt.Fprintf(stderr, "pmcp: --path must start with /, got %q\n", path)
		return exitUsage
	}
	mux := http.NewServeMux()
	if err := sec.apply(ctx, addr, mux, &hopts, stderr); err != nil {
		fmt.Fprintf(stderr, "pmcp: %s\n", errText(err))
		return exitError
	}
	h := pmcp.NewStreamableHTTPHandler(srv, hopts)
	if observe != nil {
		observe(h)
	}
	mux.Handle(path, h)
	if mount != nil {
		mount(mux)
	}
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		h.Close()
		fmt.Fprintf(stderr, "pmcp: %s\n", errText(err))
		return exitError
	}
	logger.Info("pmcp: serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+path)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err = <-served:
		// The listener failed; nothing was shut down yet.
		h.Close()
		fmt.Fprintf(stderr, "pmcp: %s\n", errText(err))
		return exitError
	case <-ctx.Done():
	}
	logger.Info("pmcp: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownGrace)
	defer cancel()
	// The handler ends its idle streams first, so the server's wait for
	// idle connections can complete.
	hdone := make(chan error, 1)
	go func() { hdone <- h.Shutdown(sctx) }()
	serr := hs.Shutdown(sctx)
	herr := <-hdone
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "pmcp: %s\n", errText(err))
		return exitError
	}
	if serr != nil || herr != nil {
		_ = hs.Close()
		logger.Warn("pmcp: shutdown grace period expired", "server", serr, "handler", herr)
	}
	return exitOK
}
