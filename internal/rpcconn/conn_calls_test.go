package rpcconn

import (
	"context"
	"errors"
	"fmt"
	"github.com/gopmcp/pmcp/jsonrpc"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ---------------------------------------------------------------------------
// Outgoing calls.

func TestConnCall(t *testing.T) {
	peerErr := &jsonrpc.Error{Code: -32050, Message: "refused", Data: jsontext.Value(`[1]`)}
	tests := []struct {
		name       string
		params     any
		wantParams string
		answer     func(id jsonrpc.ID) *jsonrpc.Response
		wantResult string
		wantErr    *jsonrpc.Error
	}{
		{
			name:       "result",
			params:     map[string]string{"q": "x"},
			wantParams: `{"q":"x"}`,
			answer: func(id jsonrpc.ID) *jsonrpc.Response {
				return &jsonrpc.Response{ID: id, Result: jsontext.Value(`{"a":1}`)}
			},
			wantResult: `{"a":1}`,
		},
		{
			name: "nil params omitted",
			answer: func(id jsonrpc.ID) *jsonrpc.Response {
				return &jsonrpc.Response{ID: id, Result: jsontext.Value(`true`)}
			},
			// wantParams empty: no params member
			wantResult: `true`,
		},
		{
			name:       "raw params",
			params:     jsontext.Value(`[1,2]`),
			wantParams: `[1,2]`,
			answer: func(id jsonrpc.ID) *jsonrpc.Response {
				return &jsonrpc.Response{ID: id, Result: jsontext.Value(`null`)}
			},
			wantResult: `null`,
		},
		{
			name:    "peer error",
			params:  []int{1},
			answer:  func(id jsonrpc.ID) *jsonrpc.Response { return &jsonrpc.Response{ID: id, Error: peerErr} },
			wantErr: peerErr,
			// params checked too
			wantParams: `[1]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, d, _ := newTestConn(t, nil, ConnOptions{})
			type result struct {
				v   jsontext.Value
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := c.Call(context.Background(), "peer/method", tt.params)
				done <- result{v, err}
			}()
			req := d.recvRequest()
			if req.Method != "peer/method" || !req.ID.IsValid() || string(req.Params) != tt.wantParams {
				t.Fatalf("request = %+v (params %s)", req, req.Params)
			}
			if n, ok := req.ID.Int64(); !ok || n < 1 {
				t.Fatalf("request id %v, want a positive integer", req.ID)
			}
			d.send(tt.answer(req.ID))
			var res result
			select {
			case res = <-done:
			case <-time.After(testTimeout):
				t.Fatal("Call did not return")
			}
			if tt.wantErr != nil {
				var e *jsonrpc.Error
				if !errors.As(res.err, &e) || e.Code != tt.wantErr.Code || e.Message != tt.wantErr.Message {
					t.Fatalf("err = %v, want %v", res.err, tt.wantErr)
				}
				return
			}
			if res.err != nil || string(res.v) != tt.wantResult {
				t.Fatalf("Call = %s, %v; want %s", res.v, res.err, tt.wantResult)
			}
		})
	}
}

func TestConnCallMarshalError(t *testing.T) {
	c, _, _ := newTestConn(t, nil, ConnOptions{})
	if _, err := c.Call(context.Background(), "m", make(chan int)); err == nil {
		t.Fatal("Call with unmarshalable params succeeded")
	}
	if err := c.Notify(context.Background(), "m", jsontext.Value(`{`)); !errors.Is(err, errInvalidRaw) {
		t.Fatalf("Notify with invalid raw params = %v", err)
	}
	if got := c.Stats().PendingCalls; got != 0 {
		t.Fatalf("PendingCalls = %d, want 0", got)
	}
}

func TestConnUnknownResponseDropped(t *testing.T) {
	c, d, _ := newTestConn(t, HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil }), ConnOptions{})
	d.send(&jsonrpc.Response{ID: jsonrpc.Int64ID(12345), Result: jsontext.Value(`1`)})
	d.send(&jsonrpc.Response{ID: jsonrpc.StringID("x"), Error: jsonrpc.NewError(1, "x")})
	d.call(jsonrpc.Int64ID(1), "sync") // the responses above were processed before this
	if got := c.Stats().DroppedResponses; got != 2 {
		t.Fatalf("DroppedResponses = %d, want 2", got)
	}
}

func TestConnCallContextCancelled(t *testing.T) {
	type cancelled struct {
		id     jsonrpc.ID
		method string
		cause  error
	}
	hook := make(chan cancelled, 1)
	cause := errors.New("user gave up")
	opts := ConnOptions{OnCallCancelled: func(id jsonrpc.ID, method string, c error) {
		hook <- cancelled{id, method, c}
	}}
	c, d, _ := newTestConn(t, nil, opts)

	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "slow/thing", nil)
		errc <- err
	}()
	req := d.recvRequest()
	if got := c.Stats().PendingCalls; got != 1 {
		t.Fatalf("PendingCalls = %d, want 1", got)
	}
	cancel(cause)
	if err := waitErr(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	got := <-hook
	if got.id != req.ID || got.method != "slow/thing" || got.cause != cause {
		t.Fatalf("OnCallCancelled(%v, %q, %v), want (%v, slow/thing, %v)", got.id, got.method, got.cause, req.ID, cause)
	}
	if n := c.Stats().PendingCalls; n != 0 {
		t.Fatalf("PendingCalls = %d after cancel, want 0", n)
	}
	// A late answer is dropped and counted.
	d.send(&jsonrpc.Response{ID: req.ID, Result: jsontext.Value(`1`)})
	d.call(jsonrpc.Int64ID(1), "sync")
	if n := c.Stats().DroppedResponses; n != 1 {
		t.Fatalf("DroppedResponses = %d, want 1", n)
	}
}

func TestConnCallDeadlineWithoutHook(t *testing.T) {
	c, d, _ := newTestConn(t, nil, ConnOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "m", nil)
		errc <- err
	}()
	d.recvRequest()
	if err := waitErr(t, errc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want DeadlineExceeded", err)
	}
}

// A handler waiting in Call for the peer must not hold its concurrency slot,
// or a peer that sends another request before answering deadlocks us.
func TestConnCallFromHandlerReleasesSlot(t *testing.T) {
	var c *Conn
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "ask" {
			return "quick", nil
		}
		v, err := c.Call(ctx, "question", nil)
		if err != nil {
			return nil, err
		}
		return v, nil
	})
	a, b := newPipe(16)
	c = NewConn(a, h, ConnOptions{MaxConcurrent: 1})
	done := runConn(t, context.Background(), c)
	d := driver{t: t, pipeEnd: b}

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "ask"})
	q := d.recvRequest()
	// Before answering, the peer sends another request, then the answer.
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "other"})
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(2) || string(r.Result) != `"quick"` {
		t.Fatalf("got %+v, want the answer to request 2", r)
	}
	d.send(&jsonrpc.Response{ID: q.ID, Result: jsontext.Value(`42`)})
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(1) || string(r.Result) != `42` {
		t.Fatalf("got %+v, want 42 for request 1", r)
	}
	assertNoSlotLeak(t, c, done)
}

// The slot is taken back after Call, so MaxConcurrent keeps bounding the
// handler's remaining work.
func TestConnCallFromHandlerRetakesSlot(t *testing.T) {
	var c *Conn
	afterCall := make(chan struct{})
	finish := make(chan struct{})
	otherStarted := make(chan struct{}, 1)
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "other" {
			otherStarted <- struct{}{}
			return nil, nil
		}
		if _, err := c.Call(ctx, "question", nil); err != nil {
			return nil, err
		}
		close(afterCall)
		<-finish
		return nil, nil
	})
	a, b := newPipe(16)
	c = NewConn(a, h, ConnOptions{MaxConcurrent: 1})
	done := runConn(t, context.Background(), c)
	d := driver{t: t, pipeEnd: b}

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "ask"})
	q := d.recvRequest()
	d.send(&jsonrpc.Response{ID: q.ID, Result: jsontext.Value(`1`)})
	waitFor(t, afterCall, "Call to return in the handler")
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "other"})
	notYet(t, otherStarted, "second request while the first holds the slot again")
	close(finish)
	waitFor(t, otherStarted, "second request after the first finished")
	d.recvResponse()
	d.recvResponse()
	assertNoSlotLeak(t, c, done)
}

// A handler that waits for another party (Wait) gives its slot back, as
// one waiting in Call does: the read loop goes on serving; resume takes
// the slot again.
func TestConnWaitReleasesSlot(t *testing.T) {
	release := make(chan struct{})
	resumed := make(chan struct{})
	finish := make(chan struct{})
	otherStarted := make(chan struct{}, 2)
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "wait" {
			otherStarted <- struct{}{}
			return "quick", nil
		}
		resume := Wait(ctx)
		<-release
		resume()
		resume() // idempotent
		close(resumed)
		<-finish
		return "waited", nil
	})
	a, b := newPipe(16)
	c := NewConn(a, h, ConnOptions{MaxConcurrent: 1})
	done := runConn(t, context.Background(), c)
	d := driver{t: t, pipeEnd: b}

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "wait"})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "other"})
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(2) || string(r.Result) != `"quick"` {
		t.Fatalf("got %+v, want the answer to request 2 while 1 waits", r)
	}
	<-otherStarted
	close(release)
	waitFor(t, resumed, "the waiting handler to resume")
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(3), Method: "other"})
	notYet(t, otherStarted, "a request while the resumed handler holds the slot again")
	close(finish)
	waitFor(t, otherStarted, "the request after the handler finished")
	d.recvResponse()
	d.recvResponse()
	if Wait(context.Background()) == nil {
		t.Fatal("Wait of a ctx of no request returned nil")
	}
	assertNoSlotLeak(t, c, done)
}

func TestConnBidirectional(t *testing.T) {
	a, b := newPipe(0)
	var client, server *Conn
	server = NewConn(a, HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case "add":
			var args [2]int
			if err := json.Unmarshal(req.Params, &args); err != nil {
				return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, err.Error())
			}
			// Ask the client something while serving its request.
			v, err := server.Call(ctx, "factor", nil)
			if err != nil {
				return nil, err
			}
			var f int
			if err := json.Unmarshal(v, &f); err != nil {
				return nil, err
			}
			return (args[0] + args[1]) * f, nil
		}
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "no "+req.Method)
	}), ConnOptions{})
	client = NewConn(b, HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "factor" {
			return 10, nil
		}
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "no")
	}), ConnOptions{})
	runConn(t, context.Background(), server)
	runConn(t, context.Background(), client)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			v, err := client.Call(context.Background(), "add", [2]int{i, 1})
			if err != nil {
				t.Errorf("Call: %v", err)
				return
			}
			if want := fmt.Sprint((i + 1) * 10); string(v) != want {
				t.Errorf("add(%d,1) = %s, want %s", i, v, want)
			}
		})
	}
	wg.Wait()
	_, err := client.Call(context.Background(), "nope", nil)
	if !errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}) {
		t.Fatalf("unknown method: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Read errors and lifecycle.

func TestConnDecodeErrorAnswered(t *testing.T) {
	c, d, _ := newTestConn(t, HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return "ok", nil }), ConnOptions{})
	bad := []*jsonrpc.DecodeError{
		{Code: jsonrpc.CodeParseError, Msg: "parse error", Err: errors.New("unexpected EOF")},
		{Code: jsonrpc.CodeInvalidRequest, ID: jsonrpc.Int64ID(5), Msg: "invalid request"},
	}
	// And one straight from the codec: a request whose method is a number.
	_, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":9,"method":1}`), jsonrpc.Limits{})
	var real *jsonrpc.DecodeError
	if !errors.As(err, &real) || real.ID != jsonrpc.Int64ID(9) {
		t.Fatalf("Decode = %v, want a *DecodeError with id 9", err)
	}
	bad = append(bad, real)
	for _, de := range bad {
		d.sendErr(fmt.Errorf("transport: %w", de)) // found with errors.As
		r := d.recvResponse()
		want := de.Response()
		if r.ID != want.ID || errCode(t, r) != want.Error.Code {
			t.Fatalf("answer = %v %+v, want %v %+v", r.ID, r.Error, want.ID, want.Error)
		}
	}
	if r := d.call(jsonrpc.Int64ID(1), "m"); string(r.Result) != `"ok"` {
		t.Fatalf("not serving after decode errors: %+v", r)
	}
	if got := c.Stats().DecodeErrors; got != 3 {
		t.Fatalf("DecodeErrors = %d, want 3", got)
	}
}

func TestConnEOFDrainsInFlight(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return "drained", nil
	})
	c, d, done := newTestConn(t, h, ConnOptions{})

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "slow"})
	waitFor(t, started, "handler start")
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "never/answered", nil)
		callErr <- err
	}()
	d.recvRequest()

	d.closeWrite() // peer is done sending: Run reads io.EOF

	// Pending calls fail at once, while the handler is still running.
	if err := waitErr(t, callErr); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("pending Call at EOF = %v, want ErrClosed", err)
	}
	runDone := make(chan struct{})
	go func() {
		err := <-done
		if err != nil {
			t.Errorf("Run = %v, want nil at EOF", err)
		}
		close(runDone)
	}()
	notYet(t, runDone, "Run returning before in-flight handlers finished")

	close(release)
	waitFor(t, runDone, "Run to return")
	// The response was written before Run returned.
	select {
	case it := <-d.in:
		r, ok := it.m.(*jsonrpc.Response)
		if !ok || r.ID != jsonrpc.Int64ID(1) || string(r.Result) != `"drained"` {
			t.Fatalf("got %+v, want the drained response", it.m)
		}
	default:
		t.Fatal("response not written before Run returned")
	}
	// After Run, calls fail without writing.
	if _, err := c.Call(context.Background(), "m", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Call after Run = %v, want ErrClosed", err)
	}
	if len(d.in) != 0 {
		t.Fatal("Call after Run wrote a request")
	}
}

func TestConnEOFDrainTimeout(t *testing.T) {
	started := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done() // a long-lived request that ends only on cancellation
		return "cancelled by drain timeout", nil
	})
	_, d, done := newTestConn(t, h, ConnOptions{DrainTimeout: 20 * time.Millisecond})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "subscribe"})
	waitFor(t, started, "handler start")
	d.closeWrite()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	// Handler contexts were cancelled, but the stream still took the answer.
	if r := d.recvResponse(); string(r.Result) != `"cancelled by drain timeout"` {
		t.Fatalf("response = %+v", r)
	}
}

func TestConnErrNoResponse(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case "silent":
			return "ignored", ErrNoResponse
		case "silent-wrapped":
			return nil, fmt.Errorf("subscription ended: %w", ErrNoResponse)
		}
		return "answered", nil
	})
	_, d, done := newTestConn(t, h, ConnOptions{})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "silent"})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "silent-wrapped"})
	if r := d.call(jsonrpc.Int64ID(3), "probe"); string(r.Result) != `"answered"` {
		t.Fatalf("probe = %+v", r)
	}
	// Once Run has drained every handler, nothing else was written.
	d.closeWrite()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := len(d.in); n != 0 {
		t.Fatalf("%d unexpected messages, first %+v", n, (<-d.in).m)
	}
}

func TestConnRunContextCancelled(t *testing.T) {
	started := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	a, b := newPipe(16)
	c := NewConn(a, h, ConnOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := runConn(t, ctx, c)
	d := driver{t: t, pipeEnd: b}

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "wait"})
	waitFor(t, started, "handler start")
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "m", nil)
		callErr <- err
	}()
	d.recvRequest()

	cancel()
	if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if err := waitErr(t, callErr); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Call = %v, want ErrClosed", err)
	}
	if n := c.Stats().InFlight; n != 0 {
		t.Fatalf("InFlight = %d after Run returned", n)
	}
}

func TestConnFatalReadError(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	c, d, done := newTestConn(t, h, ConnOptions{})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "wait"})
	waitFor(t, started, "handler start")
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "m", nil)
		callErr <- err
	}()
	d.recvRequest()

	boom := errors.New("wire on fire")
	d.sendErr(boom)
	if err := waitErr(t, done); err != boom {
		t.Fatalf("Run = %v, want %v", err, boom)
	}
	waitFor(t, cancelled, "handler cancellation")
	err := waitErr(t, callErr)
	if !errors.Is(err, jsonrpc.ErrClosed) || !errors.Is(err, boom) {
		t.Fatalf("Call = %v, want ErrClosed wrapping the read error", err)
	}
}

func TestConnClose(t *testing.T) {
	started := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c, d, done := newTestConn(t, h, ConnOptions{})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "wait"})
	waitFor(t, started, "handler start")
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "m", nil)
		callErr <- err
	}()
	d.recvRequest()

	if err := c.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := waitErr(t, done); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Run = %v, want ErrClosed", err)
	}
	if err := waitErr(t, callErr); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Call = %v, want ErrClosed", err)
	}
	if _, err := c.Call(context.Background(), "m", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Call after Close = %v", err)
	}
	if err := c.Notify(context.Background(), "m", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Notify after Close = %v", err)
	}
	if err := c.Run(context.Background()); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Run after Close = %v", err)
	}
}

func TestConnCloseFromHandler(t *testing.T) {
	var c *Conn
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return nil, c.Close()
	})
	a, b := newPipe(16)
	c = NewConn(a, h, ConnOptions{})
	done := runConn(t, context.Background(), c)
	driver{t: t, pipeEnd: b}.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "shutdown"})
	if err := waitErr(t, done); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Run = %v, want ErrClosed", err)
	}
}

func TestConnRunTwice(t *testing.T) {
	c, d, _ := newTestConn(t, nil, ConnOptions{})
	d.call(jsonrpc.Int64ID(1), "ping") // proves the first Run is active
	err := c.Run(context.Background())
	if err == nil || errors.Is(err, jsonrpc.ErrClosed) || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("second Run = %v", err)
	}
}

func TestConnStats(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	c, d, _ := newTestConn(t, h, ConnOptions{})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "wait"})
	waitFor(t, started, "handler start")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "m", nil)
		errc <- err
	}()
	d.recvRequest()
	if s := c.Stats(); s.InFlight != 1 || s.PendingCalls != 1 {
		t.Fatalf("Stats = %+v, want 1 in flight and 1 pending", s)
	}
	cancel()
	waitErr(t, errc)
	close(release)
	d.recvResponse()
	if s := c.Stats(); s != (ConnStats{}) {
		t.Fatalf("Stats = %+v, want zero", s)
	}
}

// ---------------------------------------------------------------------------
// Benchmarks.

func newBenchPair(b *testing.B) (client *Conn, cleanup func()) {
	sa, sb := newPipe(0)
	server := NewConn(sa, HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return jsontext.Value(`{"ok":true}`), nil
	}), ConnOptions{})
	client = NewConn(sb, nil, ConnOptions{})
	var wg sync.WaitGroup
	wg.Go(func() { server.Run(context.Background()) })
	wg.Go(func() { client.Run(context.Background()) })
	return client, func() {
		client.Close()
		server.Close()
		wg.Wait()
	}
}

func BenchmarkConnRoundTrip(b *testing.B) {
	client, cleanup := newBenchPair(b)
	defer cleanup()
	ctx := context.Background()
	params := jsontext.Value(`{"name":"x"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.Call(ctx, "tools/call", params); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConnRoundTripParallel(b *testing.B) {
	client, cleanup := newBenchPair(b)
	defer cleanup()
	ctx := context.Background()
	params := jsontext.Value(`{"name":"x"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.Call(ctx, "tools/call", params); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
