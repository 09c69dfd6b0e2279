package pmcp

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// ClientSession.SessionID is the legacy Mcp-Session-Id the server assigned
// over Streamable HTTP (the same id the server's extra.SessionID shows),
// and "" in the modern era and over streams.
func TestClientSessionID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, _ := newHTTPTestServer(t)
	seen := make(chan string, 1)
	if err := AddTool(srv, &Tool{Name: "sid"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		seen <- extra.SessionID
		return "", nil
	}); err != nil {
		t.Fatal(err)
	}
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()
	for _, era := range []Era{EraLegacy, EraModern} {
		cs, err := NewClient(ClientOptions{Era: era}).ConnectHTTP(ctx, ts.URL, HTTPClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "sid", nil); err != nil {
			t.Fatal(err)
		}
		server := <-seen
		if got := cs.SessionID(); got != server || (era == EraLegacy) != (got != "") {
			t.Errorf("%v: SessionID() = %q, server saw %q", era, got, server)
		}
		_ = cs.Close()
	}
	cs, err := NewClient(ClientOptions{Era: EraLegacy}).Connect(ctx, serveOnPipe(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.SessionID(); got != "" {
		t.Errorf("stream: SessionID() = %q, want empty", got)
	}
	_ = cs.Close()
}
