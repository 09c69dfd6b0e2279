package pmcp

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLegacyHTTPWaitingRequestFreesItsSlot: a legacy HTTP request waiting
// for its client's answer (elicitation) does not count against
// MaxConcurrentRequests, as over a stream: the session serves others
// meanwhile instead of refusing them.
func TestLegacyHTTPWaitingRequestFreesItsSlot(t *testing.T) {
	srv, err := NewServer(ServerOptions{MaxConcurrentRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "ask"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		res, err := extra.Peer.Elicit(ctx, &ElicitParams{Message: "name?", RequestedSchema: []byte(`{"type":"object"}`)})
		if err != nil {
			return "", err
		}
		return res.Action, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "echo"}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) {
		return "echo", nil
	}); err != nil {
		t.Fatal(err)
	}
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	defer func() {
		_ = h.Close()
		ts.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	asked, release := make(chan struct{}), make(chan struct{})
	cs, err := NewClient(ClientOptions{Era: EraLegacy, Elicitation: func(ctx context.Context, _ *ElicitParams) (*ElicitResult, error) {
		close(asked)
		<-release
		return &ElicitResult{Action: "decline"}, nil
	}}).ConnectHTTP(ctx, ts.URL, HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, "ask", nil)
		errc <- err
	}()
	<-asked
	_, err = cs.CallTool(ctx, "echo", nil)
	close(release)
	if err != nil {
		t.Fatalf("echo while another request waits for the client: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Legacy requests answered on an event stream run their handlers on
// goroutines that stay for the next request (whose stack the dispatch has
// already grown), not on a new goroutine each.
func TestLegacyStreamHandlersReuseGoroutines(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	const calls = 50
	for i := range calls {
		if _, res := sseCall(t, e, sid, 10+i, "echo", `{"text":"hi"}`); res == nil || res.Error != nil {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	// One goroutine serves them all unless a call arrives before the
	// previous handler's goroutine is back in the pool.
	if n := e.h.handlers.Started(); n > calls/5 {
		t.Fatalf("%d goroutines started for %d sequential calls", n, calls)
	}
}
