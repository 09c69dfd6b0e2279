package rpcconn

import (
	"context"
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// sinkStream answers every request in Write, through the Conn's resolve
// function (ReplySink); its Read never returns a message.
type sinkStream struct {
	resolve func(*jsonrpc.Response) bool
	closed  chan struct{}
}

func (s *sinkStream) SetReplySink(resolve func(*jsonrpc.Response) bool) { s.resolve = resolve }

func (s *sinkStream) Write(_ context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
		s.resolve(&jsonrpc.Response{ID: r.ID, Result: []byte(`"pong"`)})
	}
	return nil
}

func (s *sinkStream) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-s.closed:
		return nil, errPipeClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *sinkStream) Close() error {
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return nil
}

// TestConnReplySink: a stream that reads a request's response in the
// Write that sends it hands it to the waiting Call directly; nothing goes
// through Read.
func TestConnReplySink(t *testing.T) {
	s := &sinkStream{closed: make(chan struct{})}
	c := NewConn(s, nil, ConnOptions{})
	if s.resolve == nil {
		t.Fatal("NewConn did not give the stream its resolve function")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := runConn(t, ctx, c)
	got, err := c.Call(ctx, "ping", nil)
	if err != nil || string(got) != `"pong"` {
		t.Fatalf("Call: %s, %v", got, err)
	}
	if n := c.Stats().PendingCalls; n != 0 {
		t.Fatalf("%d calls still pending", n)
	}
	_ = c.Close()
	<-done
}
