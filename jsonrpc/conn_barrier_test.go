package jsonrpc

import (
	"context"
	"sync"
	"testing"
)

// TestConnBarrier: a barrier request is answered before the message behind
// it is even read; requests that are not barriers still run concurrently.
func TestConnBarrier(t *testing.T) {
	release, release2 := make(chan struct{}), make(chan struct{})
	started := make(chan string, 4)
	xStarted := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
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
	_, d, _ := newTestConn(t, h, ConnOptions{Barrier: func(r *Request) bool { return r.Method == "init" }})
	var once, once2 sync.Once
	free := func() { once.Do(func() { close(release) }) }
	free2 := func() { once2.Do(func() { close(release2) }) }
	t.Cleanup(func() { free(); free2() }) // runs before the Conn is closed

	d.send(&Request{ID: Int64ID(1), Method: "init"})
	d.send(&Request{ID: Int64ID(2), Method: "x"})
	if m := <-started; m != "init" {
		t.Fatalf("started %s first", m)
	}
	notYet(t, xStarted, "request behind the barrier started")
	free()
	if r := d.recvResponse(); r.ID != Int64ID(1) {
		t.Fatalf("first response %+v, want the barrier's (id 1)", r)
	}
	if r := d.recvResponse(); r.ID != Int64ID(2) {
		t.Fatalf("second response %+v, want id 2", r)
	}

	// Not a barrier: "fast" is answered while "slow" still runs.
	<-started // x
	d.send(&Request{ID: Int64ID(3), Method: "slow"})
	if m := <-started; m != "slow" {
		t.Fatalf("started %s", m)
	}
	if r := d.call(Int64ID(4), "fast"); r.Error != nil || string(r.Result) != `"fast"` {
		t.Fatalf("concurrent request: %+v", r)
	}
	free2()
	if r := d.recvResponse(); r.ID != Int64ID(3) {
		t.Fatalf("got %+v, want id 3", r)
	}
}
