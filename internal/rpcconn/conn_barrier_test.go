package rpcconn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestConnBarrier: a barrier request is answered before the message behind
// it is even read; requests that are not barriers still run concurrently.
func TestConnBarrier(t *testing.T) {
	release, release2 := make(chan struct{}), make(chan struct{})
	started := make(chan string, 4)
	xStarted := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		started <- req.Method
		switch req.Method {
		case "init":
			<-release
		case "slow":
			<-release2
		case "x":
			close(xStarted)
		}
		return req.Method, nil
	})
	_, d, _ := newTestConn(t, h, ConnOptions{Barrier: func(r *jsonrpc.Request) bool { return r.Method == "init" }})
	var once, once2 sync.Once
	free := func() { once.Do(func() { close(release) }) }
	free2 := func() { once2.Do(func() { close(release2) }) }
	t.Cleanup(func() { free(); free2() }) // runs before the Conn is closed

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "init"})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "x"})
	if m := <-started; m != "init" {
		t.Fatalf("started %s first", m)
	}
	notYet(t, xStarted, "request behind the barrier started")
	free()
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(1) {
		t.Fatalf("first response %+v, want the barrier's (id 1)", r)
	}
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(2) {
		t.Fatalf("second response %+v, want id 2", r)
	}

	// Not a barrier: "fast" is answered while "slow" still runs.
	<-started // x
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(3), Method: "slow"})
	if m := <-started; m != "slow" {
		t.Fatalf("started %s", m)
	}
	if r := d.call(jsonrpc.Int64ID(4), "fast"); r.Error != nil || string(r.Result) != `"fast"` {
		t.Fatalf("concurrent request: %+v", r)
	}
	free2()
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(3) {
		t.Fatalf("got %+v, want id 3", r)
	}
}

// decodeErr decodes data, which must fail, and returns the error.
func decodeErr(t *testing.T, data string) error {
	t.Helper()
	m, err := jsonrpc.Decode([]byte(data), jsonrpc.Limits{})
	if err == nil {
		t.Fatalf("jsonrpc.Decode(%.40q...) = %v, want an error", data, m)
	}
	return err
}

// TestConnTooDeepAnsweredWithID: a request nested too deeply is answered
// with its own id, and a response nested too deeply fails the call it
// answers, so neither side waits forever.
func TestConnTooDeepAnsweredWithID(t *testing.T) {
	c, d, _ := newTestConn(t, HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) { return "ok", nil }), ConnOptions{})
	d.sendErr(decodeErr(t, `{"jsonrpc":"2.0","id":5,"method":"m","params":`+nest(300)+`}`))
	r := d.recvResponse()
	if r.ID != jsonrpc.Int64ID(5) || r.Error == nil || r.Error.Code != jsonrpc.CodeParseError {
		t.Fatalf("got %+v (error %v), want a -32700 error for id 5", r, r.Error)
	}

	res := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "deep", nil)
		res <- err
	}()
	req := d.recvRequest()
	d.sendErr(decodeErr(t, `{"jsonrpc":"2.0","id":`+req.ID.String()+`,"result":`+nest(300)+`}`))
	err := waitErr(t, res)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeParseError {
		t.Fatalf("Call: %v, want a -32700 *jsonrpc.Error", err)
	}
}

// nest returns n nested empty arrays.
func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
