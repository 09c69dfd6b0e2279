package pmcp

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// serveListen serves a modern subscriptions/listen request whose client
// accepts SSE. Unlike other streamed requests, the handler runs in the
// request's own goroutine and writes each frame straight to the response:
// a listen stream spends its life waiting, and a second goroutine plus a
// queue of encoded frames per stream would cost memory on every idle
// stream and a hand-off on every event of a fan-out. The reply stays plain
// JSON, with its proper status, when the handler fails before its
// acknowledgement.
func (h *StreamableHTTPHandler) serveListen(ctx context.Context, w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, env *requestEnv) {
	lw := &listenWriter{sw: newSSEWriter(w, h.opts.StreamWriteTimeout)}
	env.listenSend = lw.send
	// Progress or log notifications of the request (a middleware's) are
	// written in line as well, in order with the listen frames.
	env.notify = lw.send
	env.streamDone, env.streamDoneCtx = h.drain, h.drainCtx
	env.listenEvery, env.listenPing = h.opts.KeepAliveInterval, lw.ping
	if h.detached != nil {
		env.detach = func(ack []byte, l *listener, id jsonrpc.ID, params jsontext.Value) bool {
			return h.detachListen(w, r, lw, ack, l, id, params)
		}
	}
	res, err := h.s.handle(ctx, req, env)

	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.ended = true // a late notify from a goroutine of the handler writes nothing
	sw := lw.sw
	switch {
	case lw.broken || lw.detached:
		h.s.logAccess(ctx, req, env.state, res, err, 0)
	case !sw.started:
		h.s.logAccess(ctx, req, env.state, res, err, h.writeModernJSON(w, req, res, err))
	case err == errListenEnded:
		h.s.logAccess(ctx, req, env.state, res, err, 0)
	default:
		b, _ := h.encodeResponse(req.ID, res, err)
		sw.event("", b)
		h.s.logAccess(ctx, req, env.state, res, err, len(b))
		_ = sw.last()
	}
}

// listenWriter writes the frames of one listen stream; the handler's
// goroutine and, rarely, goroutines of middleware share it.
type listenWriter struct {
	mu       sync.Mutex
	sw       *sseWriter
	broken   bool    // a write failed: the client is gone
	ended    bool    // the request is over: the response must not be touched
	detached bool    // the connection was hijacked (DetachListenStreams)
	bp       *[]byte // the pooled buffer sw.buf is in, between buffer and flush
}

// buffer gives sw a pooled buffer: an idle stream keeps none.
func (lw *listenWriter) buffer() {
	if lw.bp == nil {
		lw.bp = getBuf()
		lw.sw.buf = (*lw.bp)[:0]
	}
}

var errListenWrite = errors.New("pmcp: listen stream closed")

// send writes one notification and flushes it. A params value of type
// jsontext.Value is already encoded (by the listen handler, once per
// stream) and is copied as is.
func (lw *listenWriter) send(_ context.Context, method string, params any) error {
	raw, ok := params.(jsontext.Value)
	if ok {
		if k, isList := listKindOf(method); isList && oneLineObject(raw) {
			return lw.sendList(k, raw)
		}
	} else {
		var err error
		if raw, err = marshalParams(method, params); err != nil {
			return err
		}
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.broken || lw.ended {
		return errListenWrite
	}
	lw.buffer()
	sw := lw.sw
	n := len(sw.buf)
	sw.buf = append(sw.buf, "event: message\ndata: "...)
	b, err := jsonrpc.AppendMessage(sw.buf, &jsonrpc.Request{Method: method, Params: raw})
	if err != nil {
		sw.buf = sw.buf[:n]
		return err
	}
	sw.buf = append(b, "\n\n"...)
	return lw.flush()
}

// sendList writes a list change of the listen stream: the shared frame
// around the params the handler encoded once.
func (lw *listenWriter) sendList(k listKind, raw jsontext.Value) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.broken || lw.ended {
		return errListenWrite
	}
	lw.buffer()
	lw.sw.buf = appendListFrame(lw.sw.buf, k, raw)
	return lw.flush()
}

// ping writes a keep-alive comment.
func (lw *listenWriter) ping() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.broken || lw.ended {
		return errListenWrite
	}
	lw.buffer()
	lw.sw.comment()
	return lw.flush()
}

// flush sends the headers on first use, then what is buffered; lw.mu is
// held.
func (lw *listenWriter) flush() error {
	if !lw.sw.started {
		lw.sw.start("")
	}
	err := lw.sw.flush()
	if lw.bp != nil {
		putBuf(lw.bp, lw.sw.buf)
		lw.bp, lw.sw.buf = nil, nil
	}
	if err != nil {
		lw.broken = true
		return err
	}
	return nil
}
