package pmcp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestListenAndServeShutsDownGracefully serves at /mcp of a loopback
// listener in both eras, then cancels ctx while a legacy GET stream is
// open: the stream ends, serveListener returns nil, and the port is closed.
func TestListenAndServeShutsDownGracefully(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.serveListener(ctx, ln) }()
	url := "http://" + ln.Addr().String() + "/mcp"

	post := func(body string, h http.Header) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// modern era: a stateless tools/list.
	resp := post(modernBody(1, MethodToolsList, nil, nil), modernHeaders(MethodToolsList, ""))
	if r := readJSON(t, resp); resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("modern tools/list: %d %+v", resp.StatusCode, r.Error)
	}
	// legacy era: a session and its GET stream.
	resp = post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		hdr("Accept", "application/json"))
	if r := readJSON(t, resp); resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("initialize: %d %+v", resp.StatusCode, r.Error)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	get, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	get.Header = hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid)
	stream, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	wantStatus(t, stream, 200)
	if ev, ok := newSSEReader(t, stream.Body).next(); !ok || ev.id == "" {
		t.Fatalf("GET priming %+v", ev)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serveListener after cancel: %v", err)
		}
	case <-time.After(listenAndServeGrace + 5*time.Second):
		t.Fatal("serveListener did not return after ctx was cancelled")
	}
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Fatalf("GET stream after shutdown: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener is still open after shutdown")
	}
}

// A listen error is returned at once (nothing to shut down).
func TestListenAndServeListenError(t *testing.T) {
	srv := newTestServerT(t)
	err := srv.ListenAndServe(context.Background(), "127.0.0.1:notaport")
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "listen" {
		t.Fatalf("ListenAndServe(bad addr) = %v, want a *net.OpError from listen", err)
	}
}
