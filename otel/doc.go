// Package otel instruments pmcp servers and clients with OpenTelemetry,
// following the MCP semantic conventions (spans, the operation and session
// duration histograms, and W3C trace context carried in params._meta).
//
// It lives in its own module so that the core module github.com/gopmcp/pmcp
// never depends on the OpenTelemetry SDK; it uses only the core's public
// middleware API (pmcp.Middleware, pmcp.NotificationMiddleware,
// pmcp.ClientMiddleware).
//
//	srv, _ := pmcp.NewServer(pmcp.ServerOptions{
//		Middleware:             []pmcp.Middleware{otel.ServerMiddleware(otel.Options{})},
//		NotificationMiddleware: []pmcp.NotificationMiddleware{otel.NotificationMiddleware(otel.Options{})},
//	})
//	client := pmcp.NewClient(pmcp.ClientOptions{
//		Middleware: []pmcp.ClientMiddleware{otel.ClientMiddleware(otel.Options{})},
//	})
//
// Put the OpenTelemetry middleware first (outermost) so that its span
// covers the other middleware and its context reaches them.
//
// The MCP conventions are at the Development stability level; the
// attribute keys are this package's own constants (Key*), not a semconv
// package, so that an update of the conventions is a change here only.
//
// Tool arguments and results, request _meta and baggage never become
// attributes.
package otel
