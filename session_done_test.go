package pmcp

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// sessionDoneServer returns a server whose tool "done" hands the request's
// SessionDone channel to the test.
func sessionDoneServer(t *testing.T) (*Server, chan (<-chan struct{})) {
	t.Helper()
	srv, err := NewServer(ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan (<-chan struct{}), 1)
	err = AddTool(srv, &Tool{Name: "done"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		got <- extra.SessionDone()
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, got
}

func waitClosed(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	if done == nil {
		t.Fatalf("%s: SessionDone is nil in a legacy session", what)
	}
	select {
	case <-done:
		t.Fatalf("%s: SessionDone closed while the session is open", what)
	default:
	}
}

// SessionDone closes when a legacy session ends, on streams and on
// Streamable HTTP, and is nil in the modern era.
func TestSessionDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("stream", func(t *testing.T) {
		srv, got := sessionDoneServer(t)
		c := startServer(t, srv, nil)
		c.initialize(nil)
		c.mustCall(MethodToolsCall, map[string]any{"name": "done"})
		done := <-got
		waitClosed(t, done, "stream")
		_ = c.conn.Close()
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("stream: SessionDone not closed after the connection closed")
		}
	})
	t.Run("http legacy", func(t *testing.T) {
		srv, got := sessionDoneServer(t)
		h := NewStreamableHTTPHandler(srv, nil)
		ts := httptest.NewServer(h)
		defer ts.Close()
		defer h.Close()
		cs, err := NewClient(ClientOptions{Era: EraLegacy}).ConnectHTTP(ctx, ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "done", nil); err != nil {
			t.Fatal(err)
		}
		done := <-got
		waitClosed(t, done, "http")
		_ = cs.Close() // DELETE ends the session
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("http: SessionDone not closed after the session was deleted")
		}
	})
	t.Run("modern", func(t *testing.T) {
		srv, got := sessionDoneServer(t)
		c := startServer(t, srv, nil)
		c.mustCall(MethodToolsCall, modern(map[string]any{"name": "done"}, nil, nil))
		if done := <-got; done != nil {
			t.Fatal("modern: SessionDone is not nil; the modern era has no sessions")
		}
	})
}
