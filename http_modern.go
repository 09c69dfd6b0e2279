package pmcp

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// modernStatus maps a JSON-RPC error code to the HTTP status of a modern
// reply (SEP-2575, SEP-2243).
func modernStatus(code int64) int {
	switch code {
	case 0:
		return http.StatusOK
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidParams,
		jsonrpc.CodeHeaderMismatch, jsonrpc.CodeMissingRequiredClientCapability, jsonrpc.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// serveModern serves one stateless (2026-07-28) request or notification.
func (h *StreamableHTTPHandler) serveModern(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, pk *peekedRequest, auth authResult, rs *reqState) {
	if err := h.checkModernHeaders(r, req, pk, rs); err != nil {
		writeResponse(w, http.StatusBadRequest, &jsonrpc.Response{ID: req.ID, Error: jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, err.Error())})
		return
	}
	if req.IsNotification() {
		// No client notification is defined over HTTP in this era (a
		// request is cancelled by closing its stream).
		h.s.notification(r.Context(), h.notificationOf(r, req, auth, ""), func(context.Context) {})
		w.WriteHeader(http.StatusAccepted)
		return
	}
	jsonOK, sseOK := accepts(r)
	multi := sseOK && !h.opts.JSONResponse
	if !multi && !jsonOK {
		writeResponse(w, http.StatusNotAcceptable, &jsonrpc.Response{ID: req.ID, Error: jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Not Acceptable: accept application/json or text/event-stream")})
		return
	}
	if req.Method == MethodSubscriptionsListen && multi {
		n := h.listens.Add(1)
		defer h.listens.Add(-1)
		if max := h.opts.MaxListenStreams; max > 0 && n > int64(max) {
			w.Header().Set("Retry-After", "5")
			writeResponse(w, http.StatusServiceUnavailable, &jsonrpc.Response{ID: req.ID, Error: jsonrpc.NewError(jsonrpc.CodeInternalError, "Service Unavailable: too many subscription streams")})
			return
		}
	}
	// Closing the response stream cancels the request, and so does Close.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctxShard(), cancel)
	defer stop()
	env := &rs.env
	env.authInfo, env.authCtx = auth.info, auth.ctx
	if !multi {
		res, err := h.s.handle(ctx, req, env)
		h.s.logAccess(ctx, req, rs, res, err, h.writeModernJSON(w, req, res, err))
		return
	}
	if req.Method == MethodSubscriptionsListen {
		h.serveListen(ctx, w, r, req, env)
		return
	}
	h.serveModernStream(ctx, cancel, w, req, env)
}

// checkModernHeaders validates the SEP-2243 headers against the body, as
// scanned in rs.params. The tool a tools/call names is looked up here, for
// its Mcp-Param-* bindings, and kept in rs for the dispatcher, which does
// not look it up again.
func (h *StreamableHTTPHandler) checkModernHeaders(r *http.Request, req *jsonrpc.Request, pk *peekedRequest, rs *reqState) error {
	if err := checkStandardHeaders(r.Header, req.Method, pk); err != nil {
		return err
	}
	rp := &rs.params
	if req.Method != MethodToolsCall || !rp.ok || !rp.nameIsStr {
		return nil
	}
	st, ok := h.s.tools.get(rp.nameStr)
	if !ok {
		return nil // the dispatcher reports the unknown tool
	}
	rs.tool = st
	if len(st.headers) > 0 {
		return checkParamHeaders(r.Header, st.headers, rp.call.Arguments)
	}
	return nil
}

// writeModernJSON writes the JSON reply and returns its size.
func (h *StreamableHTTPHandler) writeModernJSON(w http.ResponseWriter, req *jsonrpc.Request, res any, err error) int {
	if err == errListenEnded {
		w.WriteHeader(http.StatusOK)
		return 0
	}
	bp := getBuf()
	b, code := h.appendResponse((*bp)[:0], req.ID, res, err)
	if d := h.opts.StreamWriteTimeout; d > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
	}
	writeJSONBody(w, modernStatus(code), b)
	n := len(b)
	putBuf(bp, b) // the ResponseWriter does not retain it
	return n
}

// modernOutcome is what the handler goroutine of a streamed request
// produced.
type modernOutcome struct {
	res any
	err error
}

// serveModernStream serves a request whose client accepts SSE. The handler
// runs in its own goroutine; its progress and log notifications go through
// a bounded queue (drop-newest) that this goroutine writes out, always
// before the response. The reply stays plain JSON, with its proper HTTP
// status, unless something must be streamed first: a notification, a
// listen frame or a keep-alive.
func (h *StreamableHTTPHandler) serveModernStream(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, req *jsonrpc.Request, env *requestEnv) {
	q := make(chan []byte, h.opts.NotificationBuffer)
	var drops atomic.Int64
	env.notify = func(_ context.Context, method string, params any) error {
		b, err := encodeMessage(noID, method, params)
		if err != nil {
			return err
		}
		select {
		case q <- b:
		default:
			drops.Add(1)
			h.dropped.Add(1)
		}
		return nil
	}
	done := make(chan modernOutcome, 1)
	h.reqWG.Add(1) // this ServeHTTP holds a count, so Add cannot race Wait
	go func() {
		defer h.reqWG.Done()
		res, err := h.s.handle(ctx, req, env)
		done <- modernOutcome{res, err}
	}()
	sw := newSSEWriter(w, h.opts.StreamWriteTimeout)
	tick, stopTick := h.keepAlive()
	defer stopTick()
	var out modernOutcome
	broken := false
	write := func() {
		if !sw.started {
			sw.start("")
		}
		if !broken && sw.flush() != nil {
			broken = true
		}
	}
loop:
	for {
		select {
		case b := <-q:
			sw.event("", b)
			for more := true; more; {
				select {
				case b := <-q:
					sw.event("", b)
				default:
					more = false
				}
			}
			write()
		case <-tick:
			sw.comment()
			write()
		case out = <-done:
			break loop
		}
		if broken {
			// The client is gone: cancel the handler and wait for it.
			cancel()
			out = <-done
			break loop
		}
	}
	if n := drops.Load(); n > 0 {
		h.log.Warn("pmcp: dropped notifications for a slow HTTP client", "method", req.Method, "id", req.ID.String(), "dropped", n)
	}
	if broken {
		h.s.logAccess(ctx, req, env.state, out.res, out.err, 0)
		return
	}
	// Notifications of the request go out before its response.
	for more := true; more; {
		select {
		case b := <-q:
			sw.event("", b)
		default:
			more = false
		}
	}
	if !sw.started && len(sw.buf) == 0 {
		h.s.logAccess(ctx, req, env.state, out.res, out.err, h.writeModernJSON(w, req, out.res, out.err))
		return
	}
	n := 0
	if out.err != errListenEnded {
		b, _ := h.encodeResponse(req.ID, out.res, out.err)
		sw.event("", b)
		n = len(b)
	}
	h.s.logAccess(ctx, req, env.state, out.res, out.err, n)
	write()
}
