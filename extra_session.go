package pmcp

// maxSessionEndFuncs bounds the functions OnSessionEnd keeps per session.
const maxSessionEndFuncs = 16

// OnSessionEnd registers f to run once when the legacy session the request
// belongs to ends: its stdio or in-memory connection closed, or its
// Streamable HTTP session was deleted, expired or its handler closed. f
// runs synchronously in the goroutine that ends the session (before
// Server.Serve returns; before a DELETE is answered; during the idle sweep
// or StreamableHTTPHandler.Close), so what it records is in place before
// the program can shut its exporters down. It must return quickly. If the
// session already ended, f runs at once.
//
// It reports false, and never runs f, in the modern era (which has no
// sessions), for extras not built by a server, and once the session holds
// 16 functions: register once per session (for example
// while serving initialize), not once per request.
//
// Middleware uses it to measure session duration (the OpenTelemetry
// mcp.server.session.duration histogram) or to drop per-session state.
func (e *RequestHandlerExtra) OnSessionEnd(f func()) bool {
	if e == nil || e.session == nil || f == nil {
		return false
	}
	return e.session.addOnEnd(f)
}

// SessionKey identifies a legacy session within its Server. It is
// comparable and opaque; the zero value means "no session".
type SessionKey struct{ s *session }

// IsZero reports whether k names no session.
func (k SessionKey) IsZero() bool { return k.s == nil }

// SessionKey returns the key of the legacy session the request belongs to
// (a stdio or in-memory connection, or a Streamable HTTP session): the same
// for every request of the session and different from every other
// session's. It is the zero SessionKey in the modern era, which has no
// sessions. Use it to keep per-session state, dropped in OnSessionEnd.
func (e *RequestHandlerExtra) SessionKey() SessionKey {
	if e == nil {
		return SessionKey{}
	}
	return SessionKey{e.session}
}
