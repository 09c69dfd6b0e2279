package pmcp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// serveModernStream serves a request whose client accepts SSE. The handler
// runs in the request's goroutine, as for a JSON reply; its progress and
// log notifications go through a bounded queue (drop-newest) that a writer
// goroutine writes out, always before the response. The writer starts with
// the first notification, or when the keep-alive interval passes first:
// a request that streams nothing costs no goroutine, no queue and no
// hand-off, and its reply stays plain JSON, with its proper HTTP status.
func (h *StreamableHTTPHandler) serveModernStream(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, req *jsonrpc.Request, env *requestEnv) {
	ms := &modernStream{h: h, sw: newSSEWriter(w, h.opts.StreamWriteTimeout), cancel: cancel}
	env.notify = ms.notify
	var ka *time.Timer
	if d := h.opts.KeepAliveInterval; d > 0 {
		ka = time.AfterFunc(d, ms.keepAlive)
	}
	res, err := h.s.handle(ctx, req, env)
	ms.mu.Lock()
	ms.done = true // a late notify from a goroutine of the handler queues nothing
	writer := ms.exited
	if writer != nil {
		ms.wake()
	}
	drops := ms.drops
	ms.mu.Unlock()
	if ka != nil {
		ka.Stop() // a keepAlive running now sees done
	}
	if writer != nil {
		<-writer // the writer has queued everything into sw and returned
	}
	if drops > 0 {
		h.log.Warn("pmcp: dropped notifications for a slow HTTP client", "method", req.Method, "id", req.ID.String(), "dropped", drops)
	}
	sw := ms.sw
	if ms.broken {
		h.s.logAccess(ctx, req, env.state, res, err, 0)
		return
	}
	if !sw.started && len(sw.buf) == 0 {
		h.s.logAccess(ctx, req, env.state, res, err, h.writeModernJSON(w, req, res, err))
		return
	}
	n := 0
	if err != errListenEnded {
		b, _ := h.encodeResponse(req.ID, res, err)
		sw.event("", b)
		n = len(b)
	}
	h.s.logAccess(ctx, req, env.state, res, err, n)
	if !sw.started {
		sw.start("")
	}
	_ = sw.last()
}

// modernStream is the response of a streamed modern request. Until its
// writer goroutine starts, only the request's goroutine touches sw; from
// then until exited is closed, only the writer does.
type modernStream struct {
	h      *StreamableHTTPHandler
	sw     *sseWriter
	cancel context.CancelFunc // a failed write cancels the request
	broken bool               // a write failed; the writer's, read after exited

	mu     sync.Mutex
	q      [][]byte      // encoded notifications not yet handed to sw
	drops  int64         // notifications dropped because q was full
	done   bool          // the handler returned
	ping   bool          // a keep-alive comment is due
	signal chan struct{} // capacity 1: "q, ping or done changed"; made with the writer
	exited chan struct{} // closed when the writer returns; nil until it starts
}

// notify is the request's RequestHandlerExtra notification path: it never
// blocks on the client.
func (ms *modernStream) notify(_ context.Context, method string, params any) error {
	b, err := encodeMessage(noID, method, params)
	if err != nil {
		return err
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	switch {
	case ms.done:
	case len(ms.q) >= ms.h.opts.NotificationBuffer:
		ms.drops++
		ms.h.dropped.Add(1)
	default:
		ms.q = append(ms.q, b)
		ms.startOrWake()
	}
	return nil
}

// keepAlive runs when the keep-alive interval passed before anything was
// streamed: the writer starts with a comment, then keeps its own ticker.
func (ms *modernStream) keepAlive() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if !ms.done {
		ms.ping = true
		ms.startOrWake()
	}
}

// startOrWake starts the writer, or wakes it; ms.mu is held.
func (ms *modernStream) startOrWake() {
	if ms.exited == nil {
		ms.signal, ms.exited = make(chan struct{}, 1), make(chan struct{})
		go ms.write()
		return
	}
	ms.wake()
}

// wake signals the writer; ms.mu is held and the writer was started.
func (ms *modernStream) wake() {
	select {
	case ms.signal <- struct{}{}:
	default:
	}
}

// write is the writer goroutine: it writes the queued notifications and
// keep-alive comments until the handler returns (leaving the last ones in
// sw's buffer, for the response to follow) or a write fails.
func (ms *modernStream) write() {
	defer close(ms.exited)
	tick, stopTick := ms.h.keepAlive()
	defer stopTick()
	sw := ms.sw
	for {
		ms.mu.Lock()
		q, ping, done := ms.q, ms.ping, ms.done
		ms.q, ms.ping = nil, false
		ms.mu.Unlock()
		for _, b := range q {
			sw.event("", b)
		}
		if ping {
			sw.comment()
		}
		if done {
			return
		}
		if !sw.started {
			sw.start("")
		}
		if sw.flush() != nil {
			// The client is gone: cancel the handler; the request's
			// goroutine sees broken once this returns.
			ms.broken = true
			ms.cancel()
			return
		}
		select {
		case <-ms.signal:
		case <-tick:
			ms.mu.Lock()
			ms.ping = true
			ms.mu.Unlock()
		}
	}
}
