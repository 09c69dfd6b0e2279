package pmcp

// SessionID returns the legacy Mcp-Session-Id the server assigned to this
// session over Streamable HTTP; "" over streams (stdio, in-memory,
// command), in the modern era, and when the server assigned none. It is
// the value of OpenTelemetry's mcp.session.id on client spans.
func (s *ClientSession) SessionID() string {
	if s.http == nil {
		return ""
	}
	s.http.mu.Lock()
	defer s.http.mu.Unlock()
	return s.http.sessionID
}
