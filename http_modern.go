package pmcp

import (
	"context"
	"net/http"
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
	case jsonrpc.CodeRateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusOK
}

// serveModern serves one stateless (2026-07-28) request or notification.
func (h *StreamableHTTPHandler) serveModern(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, pk *peekedRequest, auth authResult, rs *reqState) {
	if err := h.checkModernHeaders(r, req, pk, rs); err != nil {
		refuseHeaderMismatch.write(w, &h.refusals, req.ID, err)
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
		refuseModernNotAcceptable.write(w, &h.refusals, req.ID)
		return
	}
	if !h.httpScopeCheck(w, EraModern, req, rs, auth) {
		return
	}
	if req.Method == MethodSubscriptionsListen && multi {
		n := h.listens.Add(1)
		defer h.listens.Add(-1)
		if max := h.opts.MaxListenStreams; max > 0 && n > int64(max) {
			refuseSubscriptionStreams.write(w, &h.refusals, req.ID)
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
	if code == jsonrpc.CodeRateLimited {
		rateLimitedHeaders(w, err)
	}
	writeJSONBody(w, modernStatus(code), b)
	n := len(b)
	putBuf(bp, b) // the ResponseWriter does not retain it
	return n
}
