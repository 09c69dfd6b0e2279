package rpcconn

import (
	"context"
	"errors"
	"fmt"
	"github.com/gopmcp/pmcp/internal/workpool"
	"github.com/gopmcp/pmcp/jsonrpc"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrNoResponse, returned (possibly wrapped) by a [Handler] for a request,
// makes the [Conn] send no response at all. Use it only when the protocol
// says the request is answered some other way or not at all (for example
// an MCP subscription the client ended); JSON-RPC otherwise requires an
// answer to every request.
var ErrNoResponse = errors.New("jsonrpc: no response")

// DefaultMaxConcurrent is the number of incoming requests a [Conn] serves
// at once when [ConnOptions].MaxConcurrent is 0.
const DefaultMaxConcurrent = 64

// Handler serves the requests and notifications a peer sends.
type Handler interface {
	// Handle serves one incoming request or notification (req.IsNotification()).
	//
	// For a request, a nil error sends result as the response's result (see
	// [ConnOptions].MarshalResult). A non-nil error sends an error response:
	// if errors.As finds an *[jsonrpc.Error] in it, that object is sent as is;
	// [ErrNoResponse] sends nothing; any other error becomes code -32603
	// ([jsonrpc.CodeInternalError]) with err.Error() as the message, so do not put
	// secrets in error texts that may reach a handler's return value. A
	// panic becomes -32603 "internal error: handler panicked"; the panic
	// value and stack go to the Logger only.
	//
	// For a notification, the result and error are ignored and nothing is
	// ever sent back. Notifications are handled on the connection's read
	// loop, one at a time and in arrival order, so their handlers must
	// return quickly and must not wait for [Conn.Call] (the response could
	// never be read); start a goroutine for longer work.
	//
	// ctx derives from the ctx given to [Conn.Run]. For a request it is
	// cancelled when the request is cancelled with [Conn.CancelIncoming],
	// when Run's ctx is done, on [Conn.Close], on a fatal read error, when
	// [ConnOptions].DrainTimeout expires after the peer closed, and after
	// Handle returns. A notification's ctx is shared by all notifications
	// and ends only with Run. It carries no values meant for handlers.
	Handle(ctx context.Context, req *jsonrpc.Request) (result any, err error)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, req *jsonrpc.Request) (any, error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	return f(ctx, req)
}

// ConnOptions configures a [Conn]. The zero value is ready to use.
type ConnOptions struct {
	// MaxConcurrent bounds how many incoming requests are served at once:
	// 0 means DefaultMaxConcurrent, a negative value means no bound. When
	// the bound is reached the read loop stops reading until a request
	// finishes (backpressure on the peer). A handler that is waiting in
	// Conn.Call for the peer's answer gives its slot back meanwhile (and
	// takes one again before continuing), so handlers that call the peer
	// cannot starve the read loop that must read the answers.
	// Notifications are not counted: they run inline on the read loop.
	MaxConcurrent int

	// MarshalResult turns a handler's result, and the params given to
	// Conn.Call and Conn.Notify, into JSON. nil means json.Marshal from
	// github.com/go-json-experiment/json with default options. Values of
	// type jsontext.Value and encoding/json.RawMessage bypass it and are
	// sent as they are after a validity check (an empty one means null);
	// a plain []byte is marshaled like any other value (a base64 string).
	MarshalResult func(v any) (jsontext.Value, error)

	// Logger receives handler panics (with stack, at Error level), write
	// failures and dropped messages. nil discards everything.
	Logger *slog.Logger

	// DrainTimeout bounds how long Run lets request handlers keep running
	// after the peer closed its side (io.EOF). When it expires, their
	// contexts are cancelled; their responses are still written if the
	// stream takes them, and Run still waits for them to return. 0 means no
	// bound: handlers that only end on cancellation (long-lived
	// subscriptions) then keep Run from returning until ctx is done or Close
	// is called.
	DrainTimeout time.Duration

	// OnCallCancelled, when set, is called when Conn.Call gives up because
	// its ctx ended before the peer answered, with the request's id and
	// method and context.Cause(ctx). The MCP layer uses it to send
	// notifications/cancelled; Conn itself sends nothing. It runs in the
	// goroutine of Call, before Call returns, and only when the request had
	// really been sent and not answered.
	OnCallCancelled func(id jsonrpc.ID, method string, cause error)

	// Barrier, when set, is asked about every incoming request (not
	// notifications). A request for which it returns true is served to
	// completion, its handler returned and its response written, before
	// the next message is read; other requests still run concurrently.
	// MCP uses it for initialize, so that requests pipelined behind it
	// find the session initialized. A barrier request's handler must not
	// wait for Conn.Call (the answer could not be read) and should be
	// quick: reading stops while it runs. nil means no barriers.
	Barrier func(req *jsonrpc.Request) bool
}

// ConnStats is a snapshot of a connection's counters.
type ConnStats struct {
	// InFlight is the number of incoming requests whose handlers are running.
	InFlight int
	// PendingCalls is the number of outgoing calls waiting for a response.
	PendingCalls int
	// DroppedResponses counts responses from the peer whose id matched no
	// pending call (unknown, already answered or abandoned).
	DroppedResponses uint64
	// PanicsRecovered counts panics recovered in handlers (requests and
	// notifications) and while marshaling results.
	PanicsRecovered uint64
	// DecodeErrors counts malformed messages the stream reported; each was
	// answered with its DecodeError.Response (unless that was nil).
	DecodeErrors uint64
}

// Conn is a JSON-RPC 2.0 endpoint over a [jsonrpc.Stream], serving both directions:
// it dispatches the peer's requests and notifications to a [Handler] and
// lets this side call and notify the peer. It is the engine used under
// every stream transport.
//
// Create one with [NewConn], then call [Conn.Run], which reads until the
// connection ends. Call, Notify, CancelIncoming, Stats and Close are safe
// for concurrent use, including from handlers.
//
// Incoming requests run concurrently, each in its own goroutine (goroutines
// are reused from one request to the next), bounded by
// [ConnOptions].MaxConcurrent; a request [ConnOptions].Barrier selects is
// answered before the next message is read. A request arriving with the id of a request
// still being served is answered with -32600 "duplicate request id" and not
// dispatched; ids are reusable once their response has been written (or the
// request was cancelled with CancelIncoming).
type Conn struct {
	s               jsonrpc.Stream
	h               Handler
	marshal         func(any) (jsontext.Value, error)
	log             *slog.Logger
	onCallCancelled func(jsonrpc.ID, string, error)
	barrier         func(*jsonrpc.Request) bool
	drainTimeout    time.Duration
	sem             chan struct{} // nil when unbounded
	pending         *Pending

	mu       sync.Mutex // guards incoming; held only for map operations
	incoming map[jsonrpc.ID]*incoming

	wg       sync.WaitGroup // requests being served
	inFlight atomic.Int64

	// Requests are served on goroutines that stay for the next request
	// (internal/workpool), so that a request does not pay for a new
	// goroutine and for growing its stack: up to maxIdleWorkers wait idle
	// for good, and up to as many as the Conn serves at once (a client
	// that keeps the Conn full, a pipelined burst, then starts no
	// goroutine per request) wait for workerLinger. Run's end stops them.
	workers *workpool.Pool[work]

	panics       atomic.Uint64
	decodeErrors atomic.Uint64
	closing      atomic.Bool

	life      sync.Mutex // guards running, closed, stop
	running   bool
	closed    bool
	stop      context.CancelFunc // cancels Run's context while Run is active
	closeOnce sync.Once
	closeErr  error

	readDone chan struct{} // closed when the read loop has ended
}

// ReplySink is implemented by a Stream that can read the response to a
// request in the Write that sends it (an HTTP transport reading it from
// its POST's JSON body). NewConn gives it the Conn's resolve function: the
// stream hands such a response to it, on the writing goroutine, instead
// of queueing it for Read, so that the waiting Call finds its answer when
// Write returns, without a trip through the read loop's goroutine. What
// else the stream reads still goes through Read.
type ReplySink interface {
	SetReplySink(resolve func(*jsonrpc.Response) bool)
}

// NewConn returns a connection that serves h over s. A nil h answers every
// request with -32601 (method not found), for endpoints that only call.
// The stream is owned by the Conn from now on: [Conn.Close] closes it.
func NewConn(s jsonrpc.Stream, h Handler, opts ConnOptions) *Conn {
	c := &Conn{
		readDone:        make(chan struct{}),
		s:               s,
		h:               h,
		marshal:         opts.MarshalResult,
		log:             opts.Logger,
		onCallCancelled: opts.OnCallCancelled,
		barrier:         opts.Barrier,
		drainTimeout:    opts.DrainTimeout,
		pending:         NewPending(),
		incoming:        make(map[jsonrpc.ID]*incoming),
	}
	if c.marshal == nil {
		c.marshal = marshalDefault
	}
	if rs, ok := s.(ReplySink); ok {
		rs.SetReplySink(c.pending.Resolve)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	switch n := opts.MaxConcurrent; {
	case n == 0:
		c.sem = make(chan struct{}, DefaultMaxConcurrent)
	case n > 0:
		c.sem = make(chan struct{}, n)
	}
	c.newWorkers(workerLinger)
	return c
}

// newWorkers sets up the pool that serves the requests.
func (c *Conn) newWorkers(linger time.Duration) {
	maxIdle := int32(DefaultMaxConcurrent)
	if c.sem != nil {
		maxIdle = int32(max(cap(c.sem), maxIdleWorkers))
	}
	c.workers = workpool.New(c.serveWork, workpool.Options{Keep: maxIdleWorkers, MaxIdle: maxIdle, Linger: linger})
}

func marshalDefault(v any) (jsontext.Value, error) {
	b, err := json.Marshal(v)
	return jsontext.Value(b), err
}

// incoming is the state of one incoming request being served. It is also
// the handler's context: the request's cancellable context, which, when
// the Conn bounds concurrency, carries the incoming itself under slotKey.
type incoming struct {
	context.Context // the handler's context, cancelled by cancel
	c               *Conn
	cancel          context.CancelFunc

	abandoned bool // set by CancelIncoming; guarded by c.mu

	// done, when not nil, is closed once the request has been served and
	// answered (see ConnOptions.Barrier).
	done chan struct{}

	// Slot bookkeeping, used only when c.sem != nil; guarded by smu.
	smu      sync.Mutex
	held     bool // the request owns a token in c.sem
	calls    int  // Conn.Call invocations waiting with this request's ctx
	finished bool // response written; never take a token again
}

// slotKey is the context key under which a handler's ctx carries its
// *incoming, so that Conn.Call can give the concurrency slot back while
// the handler waits for the peer. It is the only value Conn puts in a ctx.
type slotKey struct{}

// Value implements context.Context.
func (in *incoming) Value(key any) any {
	if _, ok := key.(slotKey); ok && in.c.sem != nil {
		return in
	}
	return in.Context.Value(key)
}

// work is one request handed to a worker.
type work struct {
	runCtx context.Context
	req    *jsonrpc.Request
	in     *incoming
}

// maxIdleWorkers is how many idle worker goroutines a Conn keeps for good;
// up to its concurrency limit more wait for workerLinger before leaving.
const (
	maxIdleWorkers = 16
	workerLinger   = time.Second
)

// Run reads messages from the stream and dispatches them until the
// connection ends, and returns why:
//
//   - The peer closes its side (the stream reports io.EOF): Run stops
//     reading, fails all pending outgoing calls with [jsonrpc.ErrClosed] at once (no
//     answer can arrive any more), then waits for the in-flight request
//     handlers to finish and their responses to be written, and returns nil.
//     Handler contexts stay live during this drain unless
//     [ConnOptions].DrainTimeout expires, ctx is done or Close is called.
//   - ctx is done: the in-flight handlers' contexts are cancelled, Run waits
//     for them and returns ctx.Err().
//   - [Conn.Close] is called: as for ctx, but Run returns ErrClosed.
//   - Any other read error is fatal: as for ctx, but Run returns that error.
//
// A read error that is a *[jsonrpc.DecodeError] is not fatal: Run writes its
// Response (an error response, with a null id when the id was unreadable)
// and reads on. When Response is nil (the malformed message was a
// response) and the id was readable, the pending [Conn.Call] with that id
// fails with an *[jsonrpc.Error] carrying the decode error's code. Run relies on Stream.Read returning when its ctx is done.
// Run does not close the stream; call Close for that. Run may be called
// only once.
func (c *Conn) Run(ctx context.Context) error {
	// runCtx bounds reads and response writes; handlers get contexts derived
	// from hbase, which can additionally be cancelled by the drain timeout
	// while responses can still be written.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	hbase, cancelHandlers := context.WithCancel(runCtx)
	defer cancelHandlers()
	c.life.Lock()
	switch {
	case c.closed:
		c.life.Unlock()
		return jsonrpc.ErrClosed
	case c.running:
		c.life.Unlock()
		return errors.New("jsonrpc: Conn.Run called more than once")
	}
	c.running = true
	c.stop = stop
	c.life.Unlock()

	readErr := c.readLoop(runCtx, hbase)
	close(c.readDone)

	eof := errors.Is(readErr, io.EOF)
	if eof && ctx.Err() == nil && !c.closing.Load() {
		// Graceful: let the handlers finish and answer.
		c.pending.CloseAll(jsonrpc.ErrClosed)
		if c.drainTimeout > 0 {
			t := time.AfterFunc(c.drainTimeout, func() {
				c.log.Warn("jsonrpc: drain timeout after peer closed; cancelling handlers",
					"in_flight", c.inFlight.Load())
				cancelHandlers()
			})
			defer t.Stop()
		}
	} else {
		stop()
		if eof || ctx.Err() != nil || c.closing.Load() {
			c.pending.CloseAll(jsonrpc.ErrClosed)
		} else {
			c.pending.CloseAll(fmt.Errorf("%w: %w", jsonrpc.ErrClosed, readErr))
		}
	}
	c.wg.Wait()
	c.workers.Close()

	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case c.closing.Load():
		return jsonrpc.ErrClosed
	case eof:
		return nil
	}
	return readErr
}

// readLoop reads and dispatches until a read fails for good (or ctx is
// done while waiting for a concurrency slot) and returns that error.
// Handler contexts derive from hbase.
func (c *Conn) readLoop(ctx, hbase context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := c.s.Read(ctx)
		if err != nil {
			var de *jsonrpc.DecodeError
			if errors.As(err, &de) {
				c.decodeErrors.Add(1)
				c.log.DebugContext(ctx, "jsonrpc: malformed message", "error", err)
				if r := de.Response(); r != nil {
					c.reply(ctx, r)
				} else if de.ID.IsValid() {
					// A malformed response to one of our calls (one too
					// large to read included: the stream reads its id
					// from its start): fail the call now rather than leave
					// it waiting for an answer that will not come. (The
					// peer could send an error response for that id
					// anyway.)
					c.pending.Resolve(&jsonrpc.Response{ID: de.ID, Error: &jsonrpc.Error{Code: de.Code, Message: "invalid response: " + de.Msg}})
				} else {
					// Which call it answered is unknown: that call waits
					// until its own deadline. Failing every call in
					// flight instead would end unrelated ones (long-lived
					// subscriptions among them); say it loudly.
					c.log.WarnContext(ctx, "jsonrpc: dropped a response whose id could not be read; its call waits for its deadline", "error", err)
				}
				continue
			}
			return err
		}
		switch m := m.(type) {
		case *jsonrpc.Response:
			if !c.pending.Resolve(m) {
				c.log.DebugContext(ctx, "jsonrpc: dropped response with unknown id", "id", m.ID.String())
			}
		case *jsonrpc.Request:
			if m.IsNotification() {
				c.handleNotification(hbase, m)
				continue
			}
			barrier := c.barrier != nil && c.barrier(m)
			done, err := c.dispatch(ctx, hbase, m, barrier)
			if err != nil {
				return err
			}
			if done != nil {
				// A barrier: read nothing more until it is answered.
				select {
				case <-done:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
	}
}

// handleNotification runs the handler inline; nothing is ever answered.
func (c *Conn) handleNotification(ctx context.Context, req *jsonrpc.Request) {
	if _, err := c.invoke(ctx, req); err != nil {
		c.log.DebugContext(ctx, "jsonrpc: notification handler failed", "method", req.Method, "error", err)
	}
}

// dispatch registers req and starts its handler goroutine once a
// concurrency slot is free. It fails only when ctx ends while waiting.
// For a barrier request that was started it returns a channel closed once
// the request is answered.
func (c *Conn) dispatch(runCtx, hbase context.Context, req *jsonrpc.Request, barrier bool) (<-chan struct{}, error) {
	hctx, cancel := context.WithCancel(hbase)
	in := &incoming{Context: hctx, c: c, cancel: cancel}
	if barrier {
		in.done = make(chan struct{})
	}

	c.mu.Lock()
	_, dup := c.incoming[req.ID]
	if !dup {
		c.incoming[req.ID] = in
	}
	c.mu.Unlock()
	if dup {
		cancel()
		c.reply(runCtx, &jsonrpc.Response{ID: req.ID, Error: jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "duplicate request id")})
		return nil, nil
	}

	if c.sem != nil {
		select {
		case c.sem <- struct{}{}:
		case <-runCtx.Done():
			c.unregister(req.ID, in)
			cancel()
			return nil, runCtx.Err()
		}
		if hctx.Err() != nil {
			// Cancelled while waiting for a slot: by CancelIncoming (the
			// request is forgotten and never answered) or by runCtx.
			<-c.sem
			cancel()
			if err := runCtx.Err(); err != nil {
				c.unregister(req.ID, in)
				return nil, err
			}
			return nil, nil
		}
		in.held = true // not shared yet: the goroutine has not started
	}

	c.inFlight.Add(1)
	c.wg.Add(1)
	c.workers.Go(work{runCtx: runCtx, req: req, in: in})
	return in.done, nil
}

// serveWork serves one request on a goroutine of the pool.
func (c *Conn) serveWork(w work) { c.serve(w.runCtx, w.in, w.req, w.in) }

// unregister removes in from the in-flight map unless CancelIncoming did.
func (c *Conn) unregister(id jsonrpc.ID, in *incoming) (abandoned bool) {
	c.mu.Lock()
	abandoned = in.abandoned
	if !abandoned {
		delete(c.incoming, id) // still ours: only CancelIncoming removes others
	}
	c.mu.Unlock()
	return abandoned
}

// serve runs one request's handler and writes its response.
func (c *Conn) serve(runCtx, hctx context.Context, req *jsonrpc.Request, in *incoming) {
	if in.done != nil {
		defer close(in.done) // last: after the reply and the slot release
	}
	defer c.wg.Done()
	defer in.finish()
	counted := true
	defer func() {
		if counted { // runtime.Goexit in the handler
			c.inFlight.Add(-1)
		}
	}()
	res, err := c.invoke(hctx, req)
	counted = false
	c.inFlight.Add(-1)
	in.cancel()
	// Unregister before answering, so the peer may reuse the id as soon as
	// it has the response.
	if c.unregister(req.ID, in) {
		return // cancelled by the peer: it no longer expects an answer
	}
	if err != nil && errors.Is(err, ErrNoResponse) {
		return
	}
	c.reply(runCtx, c.response(req.ID, res, err))
}

// invoke calls the handler, turning a panic into an internal error.
func (c *Conn) invoke(ctx context.Context, req *jsonrpc.Request) (res any, err error) {
	if c.h == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found")
	}
	defer func() {
		if v := recover(); v != nil {
			c.panics.Add(1)
			c.log.ErrorContext(ctx, "jsonrpc: handler panicked",
				"method", req.Method, "id", req.ID.String(),
				"panic", v, "stack", string(debug.Stack()))
			res, err = nil, PanicError()
		}
	}()
	return c.h.Handle(ctx, req)
}

// response builds the response for a handler's outcome (see [Resolve]),
// marshaling the result exactly once. A panic while marshaling (in a
// MarshalJSON method or a custom MarshalResult) is counted and logged like
// a handler panic.
func (c *Conn) response(id jsonrpc.ID, res any, err error) *jsonrpc.Response {
	out := Resolve(res, err, c.marshal)
	switch {
	case out.Panic != nil:
		c.panics.Add(1)
		c.log.Error("jsonrpc: marshaling a result panicked",
			"id", id.String(), "panic", out.Panic, "stack", string(out.Stack))
	case out.MarshalErr != nil:
		c.log.Error("jsonrpc: cannot marshal result", "id", id.String(), "error", out.MarshalErr)
	}
	return &jsonrpc.Response{ID: id, Result: out.Result, Error: out.Error}
}

// marshalParams marshals outgoing params; nil and JSON null mean "absent".
func (c *Conn) marshalParams(method string, params any) (jsontext.Value, error) {
	if params == nil {
		return nil, nil
	}
	raw, err := marshalValue(params, c.marshal)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: marshal params of %q: %w", method, err)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	return raw, nil
}

// reply writes a response, logging failures (there is no one to return
// them to).
func (c *Conn) reply(ctx context.Context, r *jsonrpc.Response) {
	if r == nil {
		return
	}
	if err := c.s.Write(ctx, r); err != nil {
		lvl := slog.LevelWarn
		if ctx.Err() != nil || c.closing.Load() {
			lvl = slog.LevelDebug
		}
		c.log.Log(ctx, lvl, "jsonrpc: cannot write response", "id", r.ID.String(), "error", err)
	}
}

// Call sends a request to the peer and waits for its response. It returns
// the raw result, or the peer's *[jsonrpc.Error] (use errors.As), or an error
// wrapping [jsonrpc.ErrClosed] when the connection ends first, or the write error.
//
// When ctx ends before the answer, Call forgets the request (a late answer
// is dropped and counted in [ConnStats].DroppedResponses), calls
// [ConnOptions].OnCallCancelled and returns ctx.Err().
//
// Params are marshaled with [ConnOptions].MarshalResult; nil (or a value
// marshaling to null) sends no params member. Call may be used from
// handlers; while it waits, the handler does not count against
// MaxConcurrent, provided ctx is the handler's ctx or derived from it. It
// must not be used from a notification handler (see [Handler]).
func (c *Conn) Call(ctx context.Context, method string, params any) (jsontext.Value, error) {
	raw, err := c.marshalParams(method, params)
	if err != nil {
		return nil, err
	}
	id, ch := c.pending.Add()
	if err := c.pending.Err(); err != nil {
		c.pending.Forget(id)
		return nil, err
	}
	if err := c.s.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		c.pending.Forget(id)
		if cerr := c.pending.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}

	in, _ := ctx.Value(slotKey{}).(*incoming)
	if in != nil && in.c != c {
		in = nil
	}
	if in != nil {
		in.beginWait()
	}
	res, err, abandoned := c.pending.await(ctx, id, ch)
	if abandoned && c.onCallCancelled != nil {
		c.onCallCancelled(id, method, context.Cause(ctx))
	}
	if in != nil {
		in.endWait()
	}
	return res, err
}

// Wait tells the Conn serving the request whose handler ctx is (or
// derives from) ctx that the handler now waits for another party rather
// than working: a third peer's answer, a user, a request parked until its
// client comes back. The request's concurrency slot (see
// [ConnOptions].MaxConcurrent) is given back, exactly as while it waits in
// [Conn.Call], so that the read loop goes on reading the responses and
// requests that may end the wait; call resume before working again (it
// takes a slot again, or goes on without one once ctx is done). Calls may
// nest. For a ctx of no bounded Conn's request, Wait does nothing.
//
// The caller bounds what waits this way: the Conn no longer does.
func Wait(ctx context.Context) (resume func()) {
	in, _ := ctx.Value(slotKey{}).(*incoming)
	if in == nil {
		return func() {}
	}
	in.beginWait()
	var once sync.Once
	return func() { once.Do(in.endWait) }
}

// Notify sends a notification to the peer. Params are marshaled as for
// [Conn.Call]. After [Conn.Close] it returns [jsonrpc.ErrClosed].
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if c.closing.Load() {
		return jsonrpc.ErrClosed
	}
	raw, err := c.marshalParams(method, params)
	if err != nil {
		return err
	}
	return c.s.Write(ctx, &jsonrpc.Request{Method: method, Params: raw})
}

// CancelIncoming cancels the context of the in-flight incoming request with
// the given id, as the MCP layer does on notifications/cancelled. The
// request is forgotten at once: its response, if the handler still
// produces one, is not sent, and the peer may reuse the id immediately.
// It reports false when no such request is in flight.
func (c *Conn) CancelIncoming(id jsonrpc.ID) bool {
	c.mu.Lock()
	in, ok := c.incoming[id]
	if ok {
		delete(c.incoming, id)
		in.abandoned = true
	}
	c.mu.Unlock()
	if ok {
		in.cancel()
	}
	return ok
}

// Close closes the stream, fails pending calls with [jsonrpc.ErrClosed] and makes
// Run cancel the in-flight handlers and return ErrClosed. It does not wait
// for Run to return, so handlers may call it. Later calls return the first
// call's result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.life.Lock()
		c.closed = true
		stop := c.stop
		c.life.Unlock()
		if stop != nil {
			stop()
		}
		c.pending.CloseAll(jsonrpc.ErrClosed)
		c.closeErr = c.s.Close()
	})
	return c.closeErr
}

// Stats returns a snapshot of the connection's counters.
func (c *Conn) Stats() ConnStats {
	return ConnStats{
		InFlight:         int(c.inFlight.Load()),
		PendingCalls:     c.pending.Len(),
		DroppedResponses: c.pending.Dropped(),
		PanicsRecovered:  c.panics.Load(),
		DecodeErrors:     c.decodeErrors.Load(),
	}
}

// beginWait gives the request's concurrency slot back while one or more
// Calls made with its ctx (or Waits) wait for the peer.
func (in *incoming) beginWait() {
	in.smu.Lock()
	in.calls++
	if in.held {
		in.held = false
		<-in.c.sem
	}
	in.smu.Unlock()
}

// endWait takes a slot again when the last waiting Call returns, so the
// handler's remaining work is bounded again. If the handler's ctx ends
// first it goes on without one.
func (in *incoming) endWait() {
	in.smu.Lock()
	in.calls--
	need := in.calls == 0 && !in.held && !in.finished
	in.smu.Unlock()
	if !need {
		return
	}
	select {
	case in.c.sem <- struct{}{}:
	case <-in.Done():
		return
	}
	in.smu.Lock()
	if in.calls == 0 && !in.held && !in.finished {
		in.held = true
	} else {
		<-in.c.sem // no longer needed
	}
	in.smu.Unlock()
}

// finish releases the slot for good once the response is written.
func (in *incoming) finish() {
	if in.c.sem == nil {
		return
	}
	in.smu.Lock()
	in.finished = true
	if in.held {
		in.held = false
		<-in.c.sem
	}
	in.smu.Unlock()
}

// ReadDone returns a channel closed once Run has stopped reading: the peer
// closed its side, the connection failed, or Run is ending. Long-lived
// handlers (subscriptions) watch it to end with the connection instead of
// holding up the drain that follows a clean EOF.
func (c *Conn) ReadDone() <-chan struct{} { return c.readDone }
