package pmcp

// SessionDone returns a channel that is closed when the legacy session the
// request belongs to ends: its stdio or in-memory connection closed, or its
// Streamable HTTP session was deleted, expired or its handler closed. It
// returns nil (a channel that never closes) in the modern era, which has no
// sessions, and for extras not built by a server.
//
// Middleware uses it to measure session duration (the OpenTelemetry
// mcp.server.session.duration histogram) or to drop per-session state:
// wait on it once per session (for example from the initialize request),
// not once per request.
func (e *RequestHandlerExtra) SessionDone() <-chan struct{} {
	if e == nil || e.session == nil {
		return nil
	}
	return e.session.doneChan()
}
