package pmcp

import (
	"bytes"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// detachedHeaderSkip are the response headers a detached stream sets
// itself; a middleware's values for them are not copied.
var detachedHeaderSkip = map[string]bool{
	"Content-Type": true, "Cache-Control": true, "Connection": true,
	"Content-Length": true, "Transfer-Encoding": true, "X-Accel-Buffering": true,
}

// detachListen takes a listen stream over from net/http: it hijacks the
// connection, writes the status line, the headers (those a middleware set
// on w too) and ack, and hands the stream to the writer pool. It reports
// false, having written nothing, when the stream must stay on the
// request's goroutine: not HTTP/1.x, something was already written, or
// the ResponseWriter cannot be hijacked.
func (h *StreamableHTTPHandler) detachListen(w http.ResponseWriter, r *http.Request, lw *listenWriter, ack []byte, l *listener, id jsonrpc.ID, params jsontext.Value) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.sw.started || len(lw.sw.buf) > 0 || lw.broken || lw.ended {
		return false
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache, no-transform\r\nX-Accel-Buffering: no\r\nConnection: close\r\n")
	_ = w.Header().WriteSubset(&head, detachedHeaderSkip)
	head.WriteString("\r\n")
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// From here on the response is ours: nothing goes through w.
	lw.ended, lw.detached = true, true
	b := head.Bytes()
	b = append(b, "event: message\ndata: "...)
	b = append(b, ack...)
	b = append(b, "\n\n"...)
	ds := &detachedStream{p: h.detached, conn: conn, l: l, id: id, params: params}
	h.listens.Add(1) // released by ds.close
	ds.extendDeadline()
	if _, err := conn.Write(b); err != nil || !h.detached.add(ds) {
		ds.close()
	}
	return true
}

// detachedPool holds the detached listen streams of a handler and the few
// goroutines that write their events. A stream with something to send is
// queued once; a writer takes it, encodes what is pending and writes it
// with a deadline. Keep-alive comments go to every stream from one ticker;
// a failed write (the client left) closes the stream.
type detachedPool struct {
	h            *StreamableHTTPHandler
	writeTimeout time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	streams map[*detachedStream]struct{}
	runq    []*detachedStream
	idle    int // writers waiting on cond
	closed  bool
}

func newDetachedPool(h *StreamableHTTPHandler) *detachedPool {
	p := &detachedPool{h: h, streams: make(map[*detachedStream]struct{}), writeTimeout: h.opts.StreamWriteTimeout}
	if p.writeTimeout <= 0 {
		// No write may block a shared writer without bound.
		p.writeTimeout = defaultStreamWriteTimeout
	}
	p.cond = sync.NewCond(&p.mu)
	h.bgWG.Add(defaultDetachedWriters + 1)
	for range defaultDetachedWriters {
		go p.writer()
	}
	go p.keepAlive()
	return p
}

// add registers ds and switches its listener to the pool; false once the
// pool is closed.
func (p *detachedPool) add(ds *detachedStream) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.streams[ds] = struct{}{}
	p.mu.Unlock()
	ds.l.setOnReady(ds.schedule)
	return true
}

// push queues ds. Only a push onto an empty queue wakes a writer; a
// writer that takes a stream and leaves others behind wakes the next idle
// one. A fan-out to thousands of streams so costs a few wake-ups, not a
// Signal per stream, while a writer stuck on a stalled client (up to the
// write timeout) still leaves the rest of the queue to the others.
func (p *detachedPool) push(ds *detachedStream) {
	p.mu.Lock()
	if !p.closed {
		p.runq = append(p.runq, ds)
		if len(p.runq) == 1 && p.idle > 0 {
			p.cond.Signal()
		}
	}
	p.mu.Unlock()
}

func (p *detachedPool) writer() {
	defer p.h.bgWG.Done()
	var buf []byte
	for {
		p.mu.Lock()
		for len(p.runq) == 0 && !p.closed {
			p.idle++
			p.cond.Wait()
			p.idle--
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		ds := p.runq[0]
		p.runq[0] = nil
		p.runq = p.runq[1:]
		if len(p.runq) == 0 {
			p.runq = p.runq[:0:0] // let a burst's backing array go
		} else if p.idle > 0 {
			p.cond.Signal()
		}
		p.mu.Unlock()
		buf = ds.run(buf[:0])
		if cap(buf) > 64<<10 {
			buf = nil
		}
	}
}

// keepAlive pings every stream each KeepAliveInterval (which is also how a
// client that left is noticed) and closes them all when the handler
// drains (Shutdown, Close).
func (p *detachedPool) keepAlive() {
	defer p.h.bgWG.Done()
	var tick <-chan time.Time
	if d := p.h.opts.KeepAliveInterval; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			p.mu.Lock()
			all := make([]*detachedStream, 0, len(p.streams))
			for ds := range p.streams {
				all = append(all, ds)
			}
			p.mu.Unlock()
			for _, ds := range all {
				ds.ping.Store(true)
				ds.schedule()
			}
		case <-p.h.drain:
			p.mu.Lock()
			p.closed = true
			all := p.streams
			p.streams = nil
			p.runq = nil
			p.cond.Broadcast()
			p.mu.Unlock()
			for ds := range all {
				ds.close()
			}
			return
		}
	}
}

// Scheduling states of a detached stream.
const (
	dsIdle    = iota
	dsQueued  // in the run queue
	dsRunning // a writer has it
	dsRerun   // a writer has it and more came meanwhile
)

// detachedStream is one listen stream served by the pool.
type detachedStream struct {
	p      *detachedPool
	conn   net.Conn
	l      *listener
	id     jsonrpc.ID
	params jsontext.Value // of its list-changed notifications
	ping   atomic.Bool    // a keep-alive is due
	closed atomic.Bool
	// deadline is the connection's write deadline; only the writer running
	// the stream (or detachListen, before) touches it.
	deadline time.Time

	mu    sync.Mutex
	state uint8
}

// schedule queues ds for a writer unless it is queued already.
func (ds *detachedStream) schedule() {
	ds.mu.Lock()
	switch ds.state {
	case dsIdle:
		ds.state = dsQueued
		ds.p.push(ds)
	case dsRunning:
		ds.state = dsRerun
	}
	ds.mu.Unlock()
}

// run writes what is pending, using buf, and returns buf.
func (ds *detachedStream) run(buf []byte) []byte {
	for {
		ds.mu.Lock()
		ds.state = dsRunning
		ds.mu.Unlock()
		if !ds.closed.Load() {
			buf = ds.write(buf[:0])
		}
		ds.mu.Lock()
		again := ds.state == dsRerun
		ds.state = dsIdle
		ds.mu.Unlock()
		if !again {
			return buf
		}
	}
}

func (ds *detachedStream) write(buf []byte) []byte {
	_ = ds.l.drain(func(ev event) error {
		if ev.kind != resourceUpdated {
			// The shared frame around the stream's encoded params.
			buf = appendListFrame(buf, ev.kind, ds.params)
			return nil
		}
		raw, err := marshalParams(listMethods[ev.kind], &ResourceUpdatedParams{URI: ev.uri, Meta: Meta{MetaSubscriptionID: ds.id}})
		if err != nil {
			return nil // cannot happen: a string and an id
		}
		n := len(buf)
		buf = append(buf, "event: message\ndata: "...)
		b, err := jsonrpc.AppendMessage(buf, &jsonrpc.Request{Method: listMethods[ev.kind], Params: raw})
		if err != nil {
			buf = buf[:n]
			return nil
		}
		buf = append(b, "\n\n"...)
		return nil
	})
	if ds.ping.Swap(false) {
		buf = append(buf, ": keep-alive\n\n"...)
	}
	if len(buf) == 0 {
		return buf
	}
	ds.extendDeadline()
	if _, err := ds.conn.Write(buf); err != nil {
		ds.close()
	}
	return buf
}

// extendDeadline gives the next write between half the write timeout and
// all of it. Moving a deadline costs as much as the write of a small
// event, so it moves only when less than half the timeout is left.
func (ds *detachedStream) extendDeadline() {
	now := time.Now()
	if ds.deadline.Sub(now) >= ds.p.writeTimeout/2 {
		return
	}
	ds.deadline = now.Add(ds.p.writeTimeout)
	_ = ds.conn.SetWriteDeadline(ds.deadline)
}

// close ends the stream: its listener goes, the connection closes (the
// client sees the end of the body) and it no longer counts as a listen
// stream.
func (ds *detachedStream) close() {
	if !ds.closed.CompareAndSwap(false, true) {
		return
	}
	h := ds.p.h
	h.s.listeners.remove(ds.l)
	_ = ds.conn.Close()
	h.listens.Add(-1)
	ds.p.mu.Lock()
	delete(ds.p.streams, ds)
	ds.p.mu.Unlock()
}
