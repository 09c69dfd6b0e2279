package pmcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/internal/workpool"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// StreamableHTTPStats are the counters of a StreamableHTTPHandler.
type StreamableHTTPStats struct {
	// Sessions is the number of live legacy sessions.
	Sessions int
	// SessionsExpired counts sessions ended by the idle timeout.
	SessionsExpired uint64
	// InFlight is the number of HTTP requests being served, streams
	// included.
	InFlight int64
	// ListenStreams is the number of open subscriptions/listen streams.
	ListenStreams int64
	// DroppedNotifications counts progress, log and list-changed
	// notifications dropped because a per-request or per-stream queue was
	// full (a slow reader). List-changed events dropped earlier, in the
	// server's listener queue, are counted in ServerStats instead.
	DroppedNotifications uint64
	// Resumptions counts GET requests that resumed a stream with
	// Last-Event-ID.
	Resumptions uint64
	// Refusals counts the requests the transport refused with an HTTP
	// error status, by reason. The keys are a fixed set, every one
	// present: host and origin (403), unauthenticated (401, or the
	// 4xx of an AuthError), insufficient_scope and no_principal (403),
	// session_required (400), session_not_found (404), header_mismatch,
	// protocol_version, body_unreadable, invalid_message, duplicate_id
	// and last_event_id (400), method (405), media_type (415),
	// not_acceptable (406), body_too_large (413), and the 503s
	// max_sessions, max_in_flight, max_listen_streams, shutting_down,
	// replica_unreachable and session_store. JSON-RPC errors of requests
	// that were served (an unknown method, invalid params) are not
	// refusals.
	Refusals map[string]uint64
}

// StreamableHTTPHandler serves a Server over Streamable HTTP, both eras at
// one endpoint, decided per request: a POST whose params carry modern _meta
// (or whose MCP-Protocol-Version header is 2026-07-28) is served statelessly;
// initialize opens a legacy (2025-11-25) session, identified by the
// Mcp-Session-Id header, with its GET stream, DELETE and resumable SSE.
//
// It must be closed (Close or Shutdown) to stop its session reaper and end
// its sessions and streams.
type StreamableHTTPHandler struct {
	s     *Server
	opts  StreamableHTTPOptions // defaults resolved
	log   *slog.Logger
	store EventStore
	lim   jsonrpc.Limits
	now   func() time.Time
	// primingHold is how long a legacy POST's response stays undecided
	// (primingHold; tests change it).
	primingHold time.Duration

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	drain     chan struct{} // closed by Shutdown and Close: idle streams end
	detached  *detachedPool // nil unless DetachListenStreams
	drainOnce sync.Once
	// drainCtx is cancelled when drain is closed (for forwarded streams).
	drainCtx    context.Context
	drainCancel context.CancelFunc

	// gate counts the ServeHTTP calls in progress, with gateClosed set once
	// the handler is shutting down; gateIdle is closed when it is set and
	// no call is left. Requests register with one atomic add, no lock.
	gate     atomic.Int64
	gateIdle chan struct{}
	idleOnce sync.Once
	reqWG    sync.WaitGroup // goroutines started by ServeHTTP calls
	// handlers runs the handlers of legacy requests answered on an event
	// stream: a goroutine that stays for the next one keeps the stack the
	// dispatch grew, where a new goroutine per request copied it (2 KiB to
	// 16) on every call.
	handlers *workpool.Pool[func()]
	bgWG     sync.WaitGroup // the reaper

	// sessions maps ids to *httpSession: lookups take no lock. smu
	// serializes the changes (and guards reaperStarted); nSessions counts
	// the entries.
	smu           sync.Mutex
	sessions      sync.Map
	nSessions     atomic.Int64
	reaperStarted bool
	reaperStop    chan struct{}
	closeOnce     sync.Once

	// ctxShards derive from ctx; stateless requests register their
	// cancellation with one of them, so that no lock is shared by all.
	ctxShards       [ctxShardCount]context.Context
	ctxShardCancels [ctxShardCount]context.CancelFunc

	inFlight  atomic.Int64
	listens   atomic.Int64
	dropped   atomic.Uint64
	expired   atomic.Uint64
	resumed   atomic.Uint64
	storeErrs atomic.Uint64
	refusals  refusalCounts
}

// NewStreamableHTTPHandler returns a handler serving s. The zero opts
// means every default.
func NewStreamableHTTPHandler(s *Server, opts StreamableHTTPOptions) *StreamableHTTPHandler {
	o := opts
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionIdleTimeout == 0 {
		o.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if o.NotificationBuffer <= 0 {
		o.NotificationBuffer = defaultNotificationBuffer
	}
	if o.KeepAliveInterval == 0 {
		o.KeepAliveInterval = defaultKeepAliveInterval
	}
	if o.SSERetry <= 0 {
		o.SSERetry = defaultSSERetry
	}
	if o.MaxListenStreams == 0 {
		o.MaxListenStreams = defaultMaxListenStreams
	}
	if o.BodyReadTimeout == 0 {
		o.BodyReadTimeout = defaultBodyReadTimeout
	}
	if o.StreamWriteTimeout == 0 {
		o.StreamWriteTimeout = defaultStreamWriteTimeout
	}
	h := &StreamableHTTPHandler{
		s:           s,
		opts:        o,
		log:         s.logger,
		store:       o.EventStore,
		now:         time.Now,
		primingHold: primingHold,
		drain:       make(chan struct{}),
		gateIdle:    make(chan struct{}),
		reaperStop:  make(chan struct{}),
		handlers:    workpool.New(func(f func()) { f() }, workpool.Options{Keep: handlerGoroutinesKept, MaxIdle: handlerGoroutinesIdle, Linger: handlerGoroutineLinger}),
	}
	if h.store == nil {
		h.store = newMemoryEventStore(MemoryEventStoreOptions{})
	}
	h.lim = jsonrpc.Limits{MaxMessageBytes: int(o.MaxBodyBytes)}
	if o.MaxBodyBytes < 0 {
		h.lim.MaxMessageBytes = -1
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.drainCtx, h.drainCancel = context.WithCancel(context.Background())
	for i := range h.ctxShards {
		h.ctxShards[i], h.ctxShardCancels[i] = context.WithCancel(h.ctx)
	}
	if o.DetachListenStreams {
		h.detached = newDetachedPool(h)
	}
	return h
}

// The legacy handler goroutines (StreamableHTTPHandler.handlers): this
// many wait idle for good, up to handlerGoroutinesIdle for
// handlerGoroutineLinger after a burst.
const (
	handlerGoroutinesKept  = 16
	handlerGoroutinesIdle  = 256
	handlerGoroutineLinger = 10 * time.Second
)

// ctxShardCount is the number of contexts stateless requests spread their
// cancellation registrations over.
const ctxShardCount = 16

// ctxShard returns one of the handler's contexts, chosen at random.
func (h *StreamableHTTPHandler) ctxShard() context.Context {
	return h.ctxShards[mrand.Uint32()%ctxShardCount]
}

// Stats returns a snapshot of the handler's counters.
func (h *StreamableHTTPHandler) Stats() StreamableHTTPStats {
	return StreamableHTTPStats{
		Sessions:             int(h.nSessions.Load()),
		SessionsExpired:      h.expired.Load(),
		InFlight:             h.inFlight.Load(),
		ListenStreams:        h.listens.Load(),
		DroppedNotifications: h.dropped.Load(),
		Resumptions:          h.resumed.Load(),
		Refusals:             h.refusals.snapshot(),
	}
}

// Shutdown stops the handler gracefully: new requests get 503, idle
// streams (legacy GET streams, subscriptions/listen) end at once, and
// requests in flight may finish until ctx is done. It then closes the
// handler as Close does, and returns ctx.Err() if ctx ended first. Call it
// before (or together with) http.Server.Shutdown, whose wait for idle
// connections would otherwise outlast open SSE streams.
func (h *StreamableHTTPHandler) Shutdown(ctx context.Context) error {
	h.closeGate()
	h.drainOnce.Do(func() { close(h.drain); h.drainCancel() })
	done := make(chan struct{})
	go func() {
		h.waitRequests()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	h.Close()
	<-done
	return err
}

// Close ends every session and stream, cancels the requests in flight,
// waits for the goroutines the handler started and stops the session
// reaper. Later requests get 503. It is safe to call more than once, but
// not from a request handler (it waits for the handlers to return).
func (h *StreamableHTTPHandler) Close() error {
	h.closeOnce.Do(func() {
		h.closeGate()
		h.drainOnce.Do(func() { close(h.drain); h.drainCancel() })
		h.cancel()
		for _, cancel := range h.ctxShardCancels {
			cancel()
		}
		h.endAllSessions()
		h.waitRequests()
		// An initialize that raced with Close may have added a session.
		h.endAllSessions()
		close(h.reaperStop)
		h.bgWG.Wait()
		h.handlers.Close() // after waitRequests: no handler is left to run
	})
	return nil
}

// gateClosed is the flag bit of gate.
const gateClosed = 1 << 62

// begin registers one ServeHTTP call; false once the handler is closed.
// A true return must be paired with end.
func (h *StreamableHTTPHandler) begin() bool {
	if h.gate.Add(1)&gateClosed != 0 {
		h.end()
		return false
	}
	return true
}

// end unregisters a ServeHTTP call (or a refused begin).
func (h *StreamableHTTPHandler) end() {
	if h.gate.Add(-1) == gateClosed {
		h.idleOnce.Do(func() { close(h.gateIdle) })
	}
}

// closeGate makes begin fail from now on.
func (h *StreamableHTTPHandler) closeGate() {
	if old := h.gate.Or(gateClosed); old&^gateClosed == 0 {
		h.idleOnce.Do(func() { close(h.gateIdle) })
	}
}

// waitRequests waits, after closeGate, for the ServeHTTP calls and then
// for the goroutines they started (which they registered in reqWG while
// they ran, so those Adds precede this Wait).
func (h *StreamableHTTPHandler) waitRequests() {
	<-h.gateIdle
	h.reqWG.Wait()
}

// authResult is the outcome of Authenticate for one request.
type authResult struct {
	info *AuthInfo
	ctx  *AuthContext
}

// principal is who the request's state is bound to (see principalOf).
func (a authResult) principal() (string, bool) { return principalOf(a.info, a.ctx) }

// ServeHTTP implements http.Handler.
func (h *StreamableHTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body bodyState
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		// The body read timeout runs from here, so that it also bounds
		// what is left of the body of a request refused before reading.
		body.pending = true
		body.rc = *http.NewResponseController(w)
		if d := h.opts.BodyReadTimeout; d > 0 {
			_ = body.rc.SetReadDeadline(time.Now().Add(d))
		}
		defer body.settle()
		if len(r.TransferEncoding) > 0 {
			// net/http honours Transfer-Encoding over a Content-Length
			// sent along, and deletes the latter before the handler can
			// see it. Bytes a front end counted in this body could then be
			// served as a second request: close the connection after any
			// chunked body (RFC 9112 §6.1).
			w.Header().Set("Connection", "close")
		}
	}
	if !h.hostAllowed(r) {
		refuseHostForbidden.write(w, &h.refusals, noID)
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && !h.originAllowed(origin) {
		refuseOriginForbidden.write(w, &h.refusals, noID)
		return
	}
	if h.opts.CORS && origin != "" {
		h.corsHeaders(w, origin)
		if r.Method == http.MethodOptions {
			h.preflight(w, r)
			return
		}
	}
	if !h.begin() {
		refuseShuttingDown.write(w, &h.refusals, noID)
		return
	}
	defer h.end()
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)

	var auth authResult
	if h.opts.Authenticate != nil {
		info, actx, err := h.opts.Authenticate(r)
		if err != nil {
			logAuthRefusal(r.Context(), h.s.logger, r, err, "")
			writeAuthError(w, &h.refusals, err)
			return
		}
		auth = authResult{info: info, ctx: actx}
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r, auth, &body)
	case http.MethodGet, http.MethodDelete:
		if classify(httpEraInput(r, eraInput{})) == EraModern {
			refuseModernOnlyPOST.write(w, &h.refusals, noID)
			return
		}
		if r.Method == http.MethodGet {
			h.legacyGet(w, r, auth)
		} else {
			h.legacyDelete(w, r, auth)
		}
	default:
		refuseMethod.write(w, &h.refusals, noID)
	}
}

// servePost reads, decodes and routes one POSTed JSON-RPC message.
func (h *StreamableHTTPHandler) servePost(w http.ResponseWriter, r *http.Request, auth authResult, bs *bodyState) {
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		refuseMediaType.write(w, &h.refusals, noID)
		return
	}
	body, ok := h.readBody(w, r, bs)
	if !ok {
		return
	}
	h.rewindBody(r, body)
	m, err := jsonrpc.Decode(body, h.lim)
	if err != nil {
		var de *jsonrpc.DecodeError
		if errors.As(err, &de) {
			if resp := de.Response(); resp != nil {
				refuseBadMessage.write(w, &h.refusals, resp.ID, resp.Error)
				return
			}
		}
		refuseInvalidMessage.write(w, &h.refusals, noID)
		return
	}
	switch m := m.(type) {
	case *jsonrpc.Response:
		if classify(httpEraInput(r, eraInput{})) == EraModern {
			refuseModernResponse.write(w, &h.refusals, noID)
			return
		}
		h.legacyClientResponse(w, r, m, auth)
	case *jsonrpc.Request:
		// The params are read once here, for the transport and for the
		// dispatcher (see server_params.go), without validating them
		// again: Decode has.
		rs := new(reqState)
		rs.params.scanValidated(m.Params)
		rs.env.state = rs
		rs.env.httpReq = r
		rs.env.params = &rs.params
		// The era is decided once, here, and stored for the dispatcher
		// and the access log.
		rs.era = classify(httpEraInput(r, rs.params.eraInput(m.Method)))
		pk := rs.params.peek(m.Method)
		rs.row = pk.row // looked up once; the dispatcher and the scope check read it
		if rs.era == EraModern {
			h.serveModern(w, r, m, &pk, auth, rs)
			return
		}
		h.legacyPost(w, r, m, auth, rs)
	}
}

func isJSONContentType(ct string) bool {
	if ct == "application/json" {
		return true // what mime.ParseMediaType makes of it
	}
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// accepts reports what the Accept header allows: JSON and explicitly SSE.
// An absent Accept header allows JSON only.
func accepts(r *http.Request) (json, sse bool) {
	vals := r.Header.Values("Accept")
	if len(vals) == 0 {
		return true, false
	}
	for _, v := range vals {
		for rest := v; ; {
			part, more, found := strings.Cut(rest, ",")
			part = strings.TrimSpace(part)
			mt := knownMediaType(part)
			if mt == "" {
				var err error
				if mt, _, err = mime.ParseMediaType(part); err != nil {
					mt = ""
				}
			}
			switch mt {
			case "application/json", "application/*", "*/*":
				json = true
			case "text/event-stream":
				sse = true
			}
			if !found {
				break
			}
			rest = more
		}
	}
	return json, sse
}

// knownMediaType returns s when it is one of the media types accepts looks
// for, written as mime.ParseMediaType returns it (lower case, without
// parameters), and "" otherwise.
func knownMediaType(s string) string {
	switch s {
	case "application/json", "application/*", "*/*", "text/event-stream":
		return s
	}
	return ""
}

// newSessionID returns 128 random bits as visible ASCII.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func writeJSONBody(w http.ResponseWriter, status int, b []byte) {
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// encodeResponse builds and encodes the response of a dispatched request,
// marshaling the result once. The outcome is mapped by rpcconn.Resolve,
// as on stream connections.
func (h *StreamableHTTPHandler) encodeResponse(id jsonrpc.ID, res any, err error) (b []byte, code int64) {
	return h.appendResponse(nil, id, res, err)
}

// appendResponse is encodeResponse appending to dst. Results are encoded
// by the direct encoder of result_encode.go into a pooled scratch buffer
// when it knows their type, else by Marshal.
func (h *StreamableHTTPHandler) appendResponse(dst []byte, id jsonrpc.ID, res any, err error) (b []byte, code int64) {
	var scratch *[]byte
	var owned jsontext.Value // what the scratch buffer holds after encoding
	out := rpcconn.Resolve(res, err, func(v any) (jsontext.Value, error) {
		scratch = getBuf()
		if b, ok := appendResult((*scratch)[:0], v); ok {
			owned = b
			return b, nil
		}
		b, err := Marshal(v)
		return jsontext.Value(b), err
	})
	if scratch != nil {
		if owned != nil {
			defer putBuf(scratch, owned)
		} else {
			defer putBuf(scratch, *scratch)
		}
	}
	switch {
	case out.Panic != nil:
		h.log.Error("pmcp: marshaling a result panicked", "id", id.String(), "panic", fmt.Sprint(out.Panic), "stack", string(out.Stack))
	case out.MarshalErr != nil:
		h.log.Error("pmcp: cannot marshal result", "id", id.String(), "error", out.MarshalErr)
	}
	resp := &jsonrpc.Response{ID: id, Result: out.Result, Error: out.Error}
	start := len(dst)
	if dst == nil {
		dst = make([]byte, 0, 256+len(resp.Result))
	}
	b, aerr := jsonrpc.AppendMessage(dst, resp)
	if aerr != nil {
		h.log.Error("pmcp: cannot encode response", "id", id.String(), "error", aerr)
		resp = &jsonrpc.Response{ID: id, Error: jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: cannot encode the response")}
		b, _ = jsonrpc.AppendMessage(b[:start], resp)
	}
	if resp.Error != nil {
		code = resp.Error.Code
	}
	return b, code
}

// encodeMessage encodes an outgoing request or notification.
func encodeMessage(id jsonrpc.ID, method string, params any) ([]byte, error) {
	raw, err := marshalParams(method, params)
	if err != nil {
		return nil, err
	}
	return jsonrpc.AppendMessage(make([]byte, 0, 64+len(raw)), &jsonrpc.Request{ID: id, Method: method, Params: raw})
}

// marshalParams encodes the params of an outgoing request or notification;
// nil (and a value encoding to null) means no params member.
func marshalParams(method string, params any) (jsontext.Value, error) {
	if params == nil {
		return nil, nil
	}
	b, err := Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("pmcp: marshal params of %s: %w", method, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// notificationOf builds the middleware view of an HTTP notification.
// It is nil when there is no notification middleware.
func (h *StreamableHTTPHandler) notificationOf(r *http.Request, req *jsonrpc.Request, auth authResult, sessionID string) *Notification {
	if h.s.nchain == nil {
		return nil
	}
	return &Notification{Method: req.Method, Params: req.Params, SessionID: sessionID, AuthInfo: auth.info, AuthContext: auth.ctx,
		Transport: httpTransportInfo(r), Header: r.Header}
}
