package pmcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// One client session with many calls in flight (a gateway's shared
// upstream session, modern era) keeps one connection per call in flight:
// calls that finish together must not find the idle pool too small and
// close connections the next calls then dial again (a TCP handshake and a
// new server goroutine per call: it doubled the upstream's CPU per call
// behind `pmcp bridge` at 16 calls in flight).
func TestClientHTTPKeepsConnectionsForCallsInFlight(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "conns", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	type textIn struct {
		Text string `json:"text"`
	}
	if err := AddTool(srv, &Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, _ *RequestHandlerExtra, in textIn) (string, error) {
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})

	s, err := NewClient(ClientOptions{Name: "c", Version: "1", Era: EraModern}).ConnectHTTP(t.Context(), ts.URL, HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const inFlight, rounds = 32, 20
	for range rounds {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				if _, err := s.CallTool(t.Context(), "echo", map[string]any{"text": "hi"}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	// At most one connection per call in flight, plus the connect.
	if n := conns.Load(); n > inFlight+1 {
		t.Fatalf("%d rounds of %d concurrent calls opened %d connections, want ≤ %d", rounds, inFlight, n, inFlight+1)
	}
}
