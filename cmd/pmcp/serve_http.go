package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/gopmcp/pmcp"
)

// serveHTTP is replaced by the streamable HTTP transport.
func serveHTTP(ctx context.Context, srv *pmcp.Server, addr, path string, logger *slog.Logger, stderr io.Writer) int {
	fmt.Fprintln(stderr, "pmcp: the streamable HTTP transport is not built yet; use --stdio")
	return exitError
}
