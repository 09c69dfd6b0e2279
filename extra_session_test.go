package pmcp

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/transport/memory"
)

// sessionEndServer returns a server whose tool "watch" registers a
// session-end function that counts into ended, and reports whether the
// registration took.
func sessionEndServer(t *testing.T, ended *atomic.Int32) (*Server, chan bool) {
	t.Helper()
	srv, err := NewServer(ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registered := make(chan bool, 1)
	err = AddTool(srv, &Tool{Name: "watch"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		registered <- extra.OnSessionEnd(func() { ended.Add(1) })
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, registered
}

// OnSessionEnd runs its function once, synchronously, when a legacy
// session ends: before Serve returns on a stream, before the DELETE is
// answered on Streamable HTTP. The modern era has no sessions.
func TestOnSessionEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("stream", func(t *testing.T) {
		var ended atomic.Int32
		srv, registered := sessionEndServer(t, &ended)
		a, b := memory.NewPipe()
		srvDone := make(chan error, 1)
		go func() { srvDone <- srv.Serve(ctx, a) }()
		cs, err := NewClient(ClientOptions{Era: EraLegacy}).Connect(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "watch", nil); err != nil {
			t.Fatal(err)
		}
		if !<-registered {
			t.Fatal("OnSessionEnd = false in a legacy session")
		}
		if n := ended.Load(); n != 0 {
			t.Fatalf("ran %d times while the session is open", n)
		}
		_ = cs.Close()
		<-srvDone
		// Serve has returned: the function must have run already.
		if n := ended.Load(); n != 1 {
			t.Fatalf("after Serve returned: ran %d times, want 1", n)
		}
	})
	t.Run("http legacy", func(t *testing.T) {
		var ended atomic.Int32
		srv, registered := sessionEndServer(t, &ended)
		h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
		ts := httptest.NewServer(h)
		defer ts.Close()
		defer h.Close()
		cs, err := NewClient(ClientOptions{Era: EraLegacy}).ConnectHTTP(ctx, ts.URL, HTTPClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "watch", nil); err != nil {
			t.Fatal(err)
		}
		if !<-registered {
			t.Fatal("OnSessionEnd = false in a legacy HTTP session")
		}
		_ = cs.Close() // the DELETE is answered after the session ended
		if n := ended.Load(); n != 1 {
			t.Fatalf("after the DELETE: ran %d times, want 1", n)
		}
		_ = h.Close()
		if n := ended.Load(); n != 1 {
			t.Fatalf("after Close: ran %d times, want 1", n)
		}
	})
	t.Run("modern", func(t *testing.T) {
		var ended atomic.Int32
		srv, registered := sessionEndServer(t, &ended)
		c := startServer(t, srv, nil)
		c.mustCall(MethodToolsCall, modern(map[string]any{"name": "watch"}, nil, nil))
		if <-registered {
			t.Fatal("OnSessionEnd = true in the modern era, which has no sessions")
		}
	})
	t.Run("bounded", func(t *testing.T) {
		srv, err := NewServer(ServerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan [2]bool, 1)
		err = AddTool(srv, &Tool{Name: "many"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			ok := true
			for range maxSessionEndFuncs {
				ok = ok && extra.OnSessionEnd(func() {})
			}
			got <- [2]bool{ok, extra.OnSessionEnd(func() {})}
			return "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		c := startServer(t, srv, nil)
		c.initialize(nil)
		c.mustCall(MethodToolsCall, map[string]any{"name": "many"})
		if r := <-got; !r[0] || r[1] {
			t.Fatalf("first %d registrations ok = %v, one more = %v; want true, false", maxSessionEndFuncs, r[0], r[1])
		}
	})
}
