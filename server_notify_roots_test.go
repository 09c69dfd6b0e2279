package pmcp

import (
	"context"
	"net/http"
	"testing"
)

// TestRootsListChangedBothTransports: a legacy client's
// notifications/roots/list_changed reaches ServerOptions.RootsListChanged
// over a stream (stdio) and over a Streamable HTTP session: both
// transports hand client notifications to the one Server.onNotification.
// A notification without params, or with params no hook reads, is
// ignored; a notifications/cancelled naming nothing running changes
// nothing.
func TestRootsListChangedBothTransports(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			called := make(chan struct{}, 4)
			srv, err := NewServer(ServerOptions{Name: "roots", Version: "1", RootsListChanged: func(context.Context) { called <- struct{}{} }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			var send func(line string)
			switch transport {
			case "stdio":
				p := startStdioServer(t, srv)
				p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}}`)
				if m, line := p.next(); m["result"] == nil {
					t.Fatalf("initialize: %s", line)
				}
				send = p.send
			case "http":
				e := newHTTPEnv(t, srv, nil)
				sid := e.initSession(nil)
				send = func(line string) {
					resp := e.post(line, hdr("Mcp-Session-Id", sid))
					wantStatus(t, resp, http.StatusAccepted)
					resp.Body.Close()
				}
			}
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","method":"notifications/cancelled"}`)
			send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}`)
			send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
			recvSignal(t, called, "RootsListChanged")
			send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"x":1}}`)
			recvSignal(t, called, "RootsListChanged")
		})
	}
}
