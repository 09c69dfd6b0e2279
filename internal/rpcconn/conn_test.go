package rpcconn

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"github.com/gopmcp/pmcp/jsonrpc"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ---------------------------------------------------------------------------
// In-test stream: a pair of connected ends passing decoded Messages over
// channels. Closing an end's write side (closeWrite) makes the other end's
// Read report io.EOF once drained; a read error can be injected.

type item struct {
	m   jsonrpc.Message
	err error
}

type pipeEnd struct {
	in      chan item // read from
	out     chan item // written to (the peer's in)
	closed  chan struct{}
	wclosed chan struct{}
	peer    *pipeEnd

	closeOnce, wcloseOnce sync.Once
}

var errPipeClosed = errors.New("pipe closed")

func newPipe(buf int) (a, b *pipeEnd) {
	ab, ba := make(chan item, buf), make(chan item, buf)
	a = &pipeEnd{in: ba, out: ab, closed: make(chan struct{}), wclosed: make(chan struct{})}
	b = &pipeEnd{in: ab, out: ba, closed: make(chan struct{}), wclosed: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

func (p *pipeEnd) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case it := <-p.in:
		return it.m, it.err
	case <-p.closed:
		return nil, errPipeClosed
	case <-p.peer.wclosed:
	case <-p.peer.closed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select { // drain what was sent before the peer closed
	case it := <-p.in:
		return it.m, it.err
	default:
		return nil, io.EOF
	}
}

func (p *pipeEnd) Write(ctx context.Context, m jsonrpc.Message) error {
	return p.send(ctx, item{m: m})
}

func (p *pipeEnd) send(ctx context.Context, it item) error {
	select {
	case <-p.closed:
		return errPipeClosed
	case <-p.wclosed:
		return errPipeClosed
	default:
	}
	select {
	case p.out <- it:
		return nil
	case <-p.closed:
		return errPipeClosed
	case <-p.wclosed:
		return errPipeClosed
	case <-p.peer.closed:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeEnd) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return nil
}

func (p *pipeEnd) closeWrite() { p.wcloseOnce.Do(func() { close(p.wclosed) }) }

// ---------------------------------------------------------------------------
// Test driver: the peer end, operated by the test.

const testTimeout = 10 * time.Second

type driver struct {
	t *testing.T
	*pipeEnd
}

func (d driver) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), testTimeout)
}

func (d driver) send(m jsonrpc.Message) {
	d.t.Helper()
	ctx, cancel := d.ctx()
	defer cancel()
	if err := d.Write(ctx, m); err != nil {
		d.t.Fatalf("driver send %#v: %v", m, err)
	}
}

func (d driver) sendErr(err error) {
	d.t.Helper()
	ctx, cancel := d.ctx()
	defer cancel()
	if err := d.pipeEnd.send(ctx, item{err: err}); err != nil {
		d.t.Fatalf("driver inject: %v", err)
	}
}

func (d driver) recv() jsonrpc.Message {
	d.t.Helper()
	ctx, cancel := d.ctx()
	defer cancel()
	m, err := d.Read(ctx)
	if err != nil {
		d.t.Fatalf("driver recv: %v", err)
	}
	return m
}

func (d driver) recvResponse() *jsonrpc.Response {
	d.t.Helper()
	m := d.recv()
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		d.t.Fatalf("driver got %T %+v, want *Response", m, m)
	}
	return r
}

func (d driver) recvRequest() *jsonrpc.Request {
	d.t.Helper()
	m := d.recv()
	r, ok := m.(*jsonrpc.Request)
	if !ok {
		d.t.Fatalf("driver got %T %+v, want *Request", m, m)
	}
	return r
}

// call sends a request and returns the next message, which must be its
// response.
func (d driver) call(id jsonrpc.ID, method string) *jsonrpc.Response {
	d.t.Helper()
	d.send(&jsonrpc.Request{ID: id, Method: method})
	r := d.recvResponse()
	if r.ID != id {
		d.t.Fatalf("response id = %v, want %v", r.ID, id)
	}
	return r
}

// runConn starts c.Run(ctx) and returns a channel with its result. The
// test's cleanup closes the Conn and waits for Run.
func runConn(t *testing.T, ctx context.Context, c *Conn) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- c.Run(ctx) })
	t.Cleanup(func() {
		c.Close()
		wg.Wait()
	})
	return done
}

// newTestConn returns a running Conn whose peer is driven by the test.
func newTestConn(t *testing.T, h Handler, opts ConnOptions) (*Conn, driver, <-chan error) {
	t.Helper()
	a, b := newPipe(16)
	c := NewConn(a, h, opts)
	done := runConn(t, context.Background(), c)
	return c, driver{t: t, pipeEnd: b}, done
}

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for a result")
		return nil
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// notYet asserts ch stays blocked for a short while. Only used to prove
// that something does NOT happen.
func notYet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s happened, want it blocked", what)
	case <-time.After(50 * time.Millisecond):
	}
}

// syncLogBuffer is a goroutine-safe log sink.
type syncLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// assertNoSlotLeak closes c, waits for Run (and so for every handler
// goroutine) and checks that all concurrency slots were given back.
func assertNoSlotLeak(t *testing.T, c *Conn, done <-chan error) {
	t.Helper()
	c.Close()
	waitErr(t, done)
	if n := len(c.sem); n != 0 {
		t.Fatalf("%d semaphore tokens leaked", n)
	}
}

func errCode(t *testing.T, r *jsonrpc.Response) int64 {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("response %v has result %s, want an error", r.ID, r.Result)
	}
	return r.Error.Code
}

// ---------------------------------------------------------------------------
// Incoming requests.

func TestConnRequestsRunConcurrently(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return req.Method, nil
	})
	_, d, _ := newTestConn(t, h, ConnOptions{})

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "slow"})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "fast"})
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(2) || string(r.Result) != `"fast"` {
		t.Fatalf("first response = %+v, want the fast one", r)
	}
	close(release)
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(1) || string(r.Result) != `"slow"` {
		t.Fatalf("second response = %+v, want the slow one", r)
	}
}

func TestConnMaxConcurrentBackpressure(t *testing.T) {
	const limit = 2
	started := make(chan jsonrpc.ID, 10)
	release := make(chan struct{})
	notified := make(chan struct{}, 10)
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.IsNotification() {
			notified <- struct{}{}
			return nil, nil
		}
		started <- req.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	c, d, _ := newTestConn(t, h, ConnOptions{MaxConcurrent: limit})

	for i := range limit {
		d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(int64(i)), Method: "block"})
	}
	for range limit {
		<-started
	}
	// A notification is not bounded: it is served while all slots are busy.
	d.send(&jsonrpc.Request{Method: "note"})
	waitFor(t, notified, "notification while slots are busy")

	// The next request waits for a slot, and the read loop with it.
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(100), Method: "block"})
	d.send(&jsonrpc.Request{Method: "note"})
	startedSig := make(chan struct{})
	go func() { // observes started without consuming more than one
		<-started
		close(startedSig)
	}()
	notYet(t, startedSig, "third request starting beyond MaxConcurrent")
	if len(notified) != 0 {
		t.Fatal("read loop went on reading while waiting for a slot")
	}
	if got := c.Stats().InFlight; got != limit {
		t.Fatalf("InFlight = %d, want %d", got, limit)
	}

	release <- struct{}{} // one request finishes
	waitFor(t, startedSig, "third request after a slot freed")
	waitFor(t, notified, "notification after the read loop resumed")
	close(release)
	for range limit + 1 {
		if r := d.recvResponse(); r.Error != nil {
			t.Fatalf("unexpected error response %+v", r.Error)
		}
	}
}

func TestConnUnboundedConcurrency(t *testing.T) {
	const n = 3 * DefaultMaxConcurrent
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		started.Done()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	_, d, _ := newTestConn(t, h, ConnOptions{MaxConcurrent: -1})
	var sender sync.WaitGroup
	sender.Go(func() {
		for i := range n {
			d.Write(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(int64(i)), Method: "block"})
		}
	})
	started.Wait() // all n run at once
	sender.Wait()
	close(release)
	for range n {
		d.recvResponse()
	}
}

func TestConnHandlerPanic(t *testing.T) {
	var logs syncLogBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "boom" {
			panic("secret panic value")
		}
		return "fine", nil
	})
	c, d, _ := newTestConn(t, h, ConnOptions{Logger: logger})

	r := d.call(jsonrpc.Int64ID(1), "boom")
	if errCode(t, r) != jsonrpc.CodeInternalError {
		t.Fatalf("code = %d, want %d", r.Error.Code, jsonrpc.CodeInternalError)
	}
	if r.Error.Message != "internal error: handler panicked" {
		t.Fatalf("message = %q", r.Error.Message)
	}
	if strings.Contains(r.Error.Message+string(r.Error.Data), "secret") {
		t.Fatal("panic value leaked to the peer")
	}
	// Still serving.
	if r := d.call(jsonrpc.Int64ID(2), "ok"); r.Error != nil || string(r.Result) != `"fine"` {
		t.Fatalf("after panic: %+v", r)
	}
	if got := c.Stats().PanicsRecovered; got != 1 {
		t.Fatalf("PanicsRecovered = %d, want 1", got)
	}
	out := logs.String()
	for _, want := range []string{`"level":"ERROR"`, "secret panic value", `"stack":`, "TestConnHandlerPanic", `"method":"boom"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestConnNotificationsNeverAnswered(t *testing.T) {
	tests := []struct {
		name string
		h    Handler
	}{
		{"result", HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return "x", nil })},
		{"error", HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return nil, errors.New("bad") })},
		{"rpc error", HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad")
		})},
		{"panic", HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { panic("boom") })},
		{"nil handler", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d, _ := newTestConn(t, tt.h, ConnOptions{})
			d.send(&jsonrpc.Request{Method: "n1"})
			d.send(&jsonrpc.Request{Method: "n2", Params: jsontext.Value(`{}`)})
			// Notifications are handled inline before the next message is
			// read, so the next thing written must be this request's answer.
			d.call(jsonrpc.StringID("sync"), "sync")
		})
	}
}

func TestConnNotificationsInlineInArrivalOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.IsNotification() {
			seen = append(seen, req.Method)
			return nil, nil
		}
		return strings.Join(seen, ","), nil
	})
	_, d, _ := newTestConn(t, h, ConnOptions{})
	for _, m := range []string{"a", "b", "c"} {
		d.send(&jsonrpc.Request{Method: m})
	}
	if r := d.call(jsonrpc.Int64ID(1), "get"); string(r.Result) != `"a,b,c"` {
		t.Fatalf("request saw notifications %s, want a,b,c", r.Result)
	}
}

func TestConnDuplicateRequestID(t *testing.T) {
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "block" {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return req.Method, nil
	})
	c, d, _ := newTestConn(t, h, ConnOptions{})

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(7), Method: "block"})
	waitFor(t, started, "first request")
	r := d.call(jsonrpc.Int64ID(7), "block")
	if errCode(t, r) != jsonrpc.CodeInvalidRequest || r.Error.Message != "duplicate request id" {
		t.Fatalf("duplicate answered with %+v", r.Error)
	}
	// A different id of the other kind is not a duplicate.
	if r := d.call(jsonrpc.StringID("7"), "echo"); r.Error != nil {
		t.Fatalf("string id \"7\" treated as duplicate of 7: %+v", r.Error)
	}
	close(release)
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(7) || string(r.Result) != `"block"` {
		t.Fatalf("original request answered with %+v", r)
	}
	// Once answered, the id may be reused.
	if r := d.call(jsonrpc.Int64ID(7), "echo"); r.Error != nil {
		t.Fatalf("reused id rejected: %+v", r.Error)
	}
	if got := c.Stats().InFlight; got != 0 {
		t.Fatalf("InFlight = %d, want 0", got)
	}
}

type marshalFail struct{}

func (marshalFail) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot") }

type marshalPanic struct{}

func (marshalPanic) MarshalJSON() ([]byte, error) { panic("marshal boom") }

func TestConnHandlerOutcomes(t *testing.T) {
	custom := &jsonrpc.Error{Code: -32001, Message: "custom", Data: jsontext.Value(`{"why":"because"}`)}
	tests := []struct {
		name       string
		res        any
		err        error
		wantResult string
		wantCode   int64
		wantMsg    string
	}{
		{name: "struct", res: struct {
			A int    `json:"a"`
			B string `json:"b,omitempty"`
		}{A: 1}, wantResult: `{"a":1}`},
		{name: "nil result", wantResult: `null`},
		{name: "typed nil map", res: map[string]int(nil), wantResult: `{}`},
		{name: "jsontext.Value passthrough", res: jsontext.Value(`{"z": 1, "a": [ 2 ]}`), wantResult: `{"z": 1, "a": [ 2 ]}`},
		{name: "RawMessage passthrough", res: stdjson.RawMessage(`[1,2]`), wantResult: `[1,2]`},
		{name: "empty raw is null", res: jsontext.Value(nil), wantResult: `null`},
		{name: "plain bytes are base64", res: []byte("hi"), wantResult: `"aGk="`},
		{name: "invalid raw", res: jsontext.Value(`{"a":`), wantCode: jsonrpc.CodeInternalError, wantMsg: "internal error: cannot marshal result"},
		{name: "unmarshalable", res: make(chan int), wantCode: jsonrpc.CodeInternalError, wantMsg: "internal error: cannot marshal result"},
		{name: "marshaler fails", res: marshalFail{}, wantCode: jsonrpc.CodeInternalError, wantMsg: "internal error: cannot marshal result"},
		{name: "marshaler panics", res: marshalPanic{}, wantCode: jsonrpc.CodeInternalError, wantMsg: "internal error: cannot marshal result"},
		{name: "*Error", err: custom, wantCode: -32001, wantMsg: "custom"},
		{name: "wrapped *Error", err: fmt.Errorf("context: %w", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad params")), wantCode: jsonrpc.CodeInvalidParams, wantMsg: "bad params"},
		{name: "plain error", err: errors.New("disk on fire"), wantCode: jsonrpc.CodeInternalError, wantMsg: "disk on fire"},
		{name: "error wins over result", res: "ignored", err: errors.New("e"), wantCode: jsonrpc.CodeInternalError, wantMsg: "e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return tt.res, tt.err })
			_, d, _ := newTestConn(t, h, ConnOptions{})
			r := d.call(jsonrpc.Int64ID(1), "m")
			if tt.wantCode == 0 {
				if r.Error != nil {
					t.Fatalf("error %+v, want result %s", r.Error, tt.wantResult)
				}
				if string(r.Result) != tt.wantResult {
					t.Fatalf("result = %s, want %s", r.Result, tt.wantResult)
				}
				return
			}
			if r.Result != nil {
				t.Fatalf("result %s set on an error response", r.Result)
			}
			if errCode(t, r) != tt.wantCode || r.Error.Message != tt.wantMsg {
				t.Fatalf("error = %d %q, want %d %q", r.Error.Code, r.Error.Message, tt.wantCode, tt.wantMsg)
			}
			if tt.err == custom && string(r.Error.Data) != string(custom.Data) {
				t.Fatalf("data = %s, want %s", r.Error.Data, custom.Data)
			}
		})
	}
}

func TestConnNilHandlerAnswersMethodNotFound(t *testing.T) {
	_, d, _ := newTestConn(t, nil, ConnOptions{})
	if r := d.call(jsonrpc.Int64ID(1), "anything"); errCode(t, r) != jsonrpc.CodeMethodNotFound {
		t.Fatalf("code = %d, want %d", r.Error.Code, jsonrpc.CodeMethodNotFound)
	}
}

func TestConnResultMarshaledOnce(t *testing.T) {
	var calls atomic.Int32
	opts := ConnOptions{MarshalResult: func(v any) (jsontext.Value, error) {
		calls.Add(1)
		b, err := json.Marshal(v)
		return jsontext.Value(b), err
	}}
	h := HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return map[string]int{"n": 1}, nil })
	_, d, _ := newTestConn(t, h, opts)
	if r := d.call(jsonrpc.Int64ID(1), "m"); string(r.Result) != `{"n":1}` {
		t.Fatalf("result = %s", r.Result)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("MarshalResult called %d times, want 1", got)
	}
}

func TestConnNotifyFromHandlerPrecedesResponse(t *testing.T) {
	var c *Conn
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		for i := range 2 {
			if err := c.Notify(ctx, "progress", map[string]int{"step": i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	a, b := newPipe(16)
	c = NewConn(a, h, ConnOptions{})
	runConn(t, context.Background(), c)
	d := driver{t: t, pipeEnd: b}

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "work"})
	for i := range 2 {
		n := d.recvRequest()
		if !n.IsNotification() || n.Method != "progress" || string(n.Params) != fmt.Sprintf(`{"step":%d}`, i) {
			t.Fatalf("message %d = %+v, want progress notification", i, n)
		}
	}
	if r := d.recvResponse(); string(r.Result) != `"done"` {
		t.Fatalf("response = %+v", r)
	}
}

func TestConnHandlerContextCancelledAfterReturn(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		ctxs <- ctx
		return nil, nil
	})
	_, d, _ := newTestConn(t, h, ConnOptions{})
	d.call(jsonrpc.Int64ID(1), "m")
	ctx := <-ctxs
	if ctx.Err() == nil {
		t.Fatal("handler ctx still live after its response was written")
	}
}

func TestConnCancelIncoming(t *testing.T) {
	started := make(chan struct{}, 1)
	sawCancel := make(chan struct{})
	hold := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "wait" {
			return req.Method, nil
		}
		started <- struct{}{}
		<-ctx.Done()
		close(sawCancel)
		<-hold // keep running after cancellation
		return "too late", ctx.Err()
	})
	c, d, _ := newTestConn(t, h, ConnOptions{})

	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(3), Method: "wait"})
	waitFor(t, started, "handler start")
	if !c.CancelIncoming(jsonrpc.Int64ID(3)) {
		t.Fatal("CancelIncoming(3) = false for an in-flight request")
	}
	waitFor(t, sawCancel, "handler ctx cancellation")
	if c.CancelIncoming(jsonrpc.Int64ID(3)) {
		t.Fatal("second CancelIncoming(3) = true")
	}
	if c.CancelIncoming(jsonrpc.Int64ID(99)) {
		t.Fatal("CancelIncoming(unknown) = true")
	}
	// The id is free at once, though the old handler still runs.
	if r := d.call(jsonrpc.Int64ID(3), "echo"); r.Error != nil || string(r.Result) != `"echo"` {
		t.Fatalf("reused id after cancel: %+v %+v", r, r.Error)
	}
	close(hold)
	// The cancelled request is never answered: the next message written is
	// the answer to this one.
	d.call(jsonrpc.Int64ID(4), "echo")
}

func TestConnCancelIncomingWhileWaitingForSlot(t *testing.T) {
	release := make(chan struct{})
	started := make(chan string, 4)
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		started <- req.Method
		if req.Method == "block" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return req.Method, nil
	})
	c, d, done := newTestConn(t, h, ConnOptions{MaxConcurrent: 1})
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "block"})
	if m := <-started; m != "block" {
		t.Fatalf("started %s", m)
	}
	d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "queued"})
	// Request 2 is registered as soon as it is read, before it has a slot.
	deadline := time.Now().Add(testTimeout)
	for !c.CancelIncoming(jsonrpc.Int64ID(2)) {
		if time.Now().After(deadline) {
			t.Fatal("request 2 never registered")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if r := d.recvResponse(); r.ID != jsonrpc.Int64ID(1) {
		t.Fatalf("got response %+v, want id 1", r)
	}
	// Request 2 never runs nor is answered.
	if r := d.call(jsonrpc.Int64ID(3), "after"); r.Error != nil {
		t.Fatalf("%+v", r.Error)
	}
	if m := <-started; m != "after" {
		t.Fatalf("cancelled queued request ran: %s", m)
	}
	assertNoSlotLeak(t, c, done)
}
