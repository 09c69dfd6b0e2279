package pmcp

import (
	"context"
	"net/http"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// The reply to a POSTed legacy request whose client accepts SSE.
//
// The 2025-11-25 transport lets a server answer each request with one JSON
// body or with an SSE stream. A stream costs a stored event per message
// (for resumption), SSE framing and a writer waiting on the stream; it is
// worth that when something must reach the client before the result, or
// when the result is slow (the priming event's id lets the client resume
// a dropped response). So the response stays undecided (the stream is
// lazy) until the first of:
//   - the handler's result, with nothing sent before it, within the
//     priming hold: one JSON body, nothing stored (no event id of the
//     request was ever sent, so there is nothing to resume);
//   - a message for the client (a notification, a server-to-client
//     request), CloseStream, a GET taking the stream over, the hold
//     passing or the client going away: an SSE stream, priming event
//     first, pumped until it completes, as before.
//
// A client that accepts SSE only, or a zero hold, gets the stream at once.
// The handler runs on a pooled goroutine in every case, so that the
// response can end while it runs (CloseStream, the client going away).

// legacyStreamReply serves a POSTed request whose client accepts SSE;
// jsonOK says whether it accepts a JSON reply too.
func (h *StreamableHTTPHandler) legacyStreamReply(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, rs *reqState, sess *httpSession, isInit, jsonOK bool) {
	st := sess.newStream()
	env := &rs.env
	env.notify = notifyOn(st)
	env.call = sess.callOn(st, &rs.peerWaiting)
	env.closeStream = st.requestClose
	a, _, _ := st.attach()
	lazy := jsonOK && h.primingHold > 0
	if lazy {
		st.mu.Lock()
		st.lazy = true
		st.mu.Unlock()
	}
	h.reqWG.Add(1) // this ServeHTTP holds a count, so Add cannot race Wait
	h.handlers.Go(func() {
		defer h.reqWG.Done()
		res, err := h.s.handle(ctx, req, env)
		sess.finish(req.ID, cancel)
		if st.finishLazy(res, err) {
			return // the request's goroutine answers with JSON
		}
		b, code := h.encodeResponse(req.ID, res, err)
		if isInit && code == 0 && !h.saveSession(ctx, sess, req.Params) {
			b, code = h.encodeResponse(req.ID, nil, errSessionStore)
		}
		h.s.logAccess(ctx, req, rs, res, err, len(b))
		st.finish(b)
		sess.removeStream(st)
		st.logDrops(req)
		if isInit && code != 0 {
			h.endSession(sess)
		}
	})
	sess.active.Add(1)
	defer func() {
		st.detach(a)
		sess.active.Add(-1)
		sess.touch()
	}()
	if lazy && h.awaitReply(st) {
		sess.removeStream(st)
		h.legacyJSONReply(ctx, w, req, rs, sess, isInit, st.res, st.err)
		return
	}
	sw := newSSEWriter(w, h.opts.StreamWriteTimeout)
	sw.start(sess.id)
	sw.priming(eventID(st.id, 0), h.opts.SSERetry)
	h.pump(r.Context(), sw, st, a, pumpOptions{})
}

// awaitReply waits while the stream is lazy, for up to the priming hold,
// and reports whether the handler returned first, having sent nothing:
// the caller then answers with JSON (res and err are in st). Otherwise
// the stream is no longer lazy, and the caller streams it. Whatever ends
// the lazy state signals the stream (push, finishLazy, attach,
// requestClose); a client that went away is seen by the pump, after the
// hold at the latest.
func (h *StreamableHTTPHandler) awaitReply(st *eventStream) bool {
	t := time.NewTimer(h.primingHold)
	defer t.Stop()
	for {
		ended := false
		select {
		case <-st.signal:
		case <-t.C:
			ended = true
		}
		st.mu.Lock()
		switch {
		case !st.lazy:
			// A message, CloseStream or a take-over decided it.
			st.mu.Unlock()
			return false
		case st.complete:
			st.lazy = false
			st.att = nil
			st.mu.Unlock()
			return true
		case ended:
			st.lazy = false // what comes from now on is stored
			st.mu.Unlock()
			return false
		}
		st.mu.Unlock()
	}
}

// legacyJSONReply answers a legacy request with one JSON body, after its
// handler returned res, err.
func (h *StreamableHTTPHandler) legacyJSONReply(ctx context.Context, w http.ResponseWriter, req *jsonrpc.Request, rs *reqState, sess *httpSession, isInit bool, res any, err error) {
	bp := getBuf()
	b, code := h.appendResponse((*bp)[:0], req.ID, res, err)
	if isInit && code == 0 && !h.saveSession(ctx, sess, req.Params) {
		b, code = h.appendResponse(b[:0], req.ID, nil, errSessionStore)
	}
	if isInit && code != 0 {
		h.endSession(sess)
	} else {
		w.Header().Set(headerSessionID, sess.id)
	}
	if d := h.opts.StreamWriteTimeout; d > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
	}
	writeJSONBody(w, http.StatusOK, b)
	h.s.logAccess(ctx, req, rs, res, err, len(b))
	putBuf(bp, b) // the ResponseWriter does not retain it
}
