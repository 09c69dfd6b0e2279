package pmcp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// sseWriter frames server-sent events onto one HTTP response. It is used
// by one goroutine at a time: the one serving the response.
type sseWriter struct {
	w            http.ResponseWriter
	rc           http.ResponseController // by value: no allocation of its own
	writeTimeout time.Duration
	deadline     time.Time // the write deadline set last
	buf          []byte
	started      bool
}

func newSSEWriter(w http.ResponseWriter, writeTimeout time.Duration) *sseWriter {
	return &sseWriter{w: w, rc: *http.NewResponseController(w), writeTimeout: writeTimeout}
}

// sseBufSize is the buffer an sseWriter starts with when it first
// appends: the priming event and a small reply fit (appending them to an
// empty buffer grew it four or five times).
const sseBufSize = 512

// grow gives s.buf room for n more bytes, at least sseBufSize.
func (s *sseWriter) grow(n int) {
	if cap(s.buf)-len(s.buf) < n {
		s.buf = append(make([]byte, 0, max(sseBufSize, 2*cap(s.buf)+n)), s.buf...)
	}
}

// start sends the status line and the SSE headers.
func (s *sseWriter) start(sessionID string) {
	hd := s.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("X-Accel-Buffering", "no")
	if sessionID != "" {
		hd.Set(headerSessionID, sessionID)
	}
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// event appends one message event; data is a single-line JSON text.
func (s *sseWriter) event(id string, data []byte) {
	s.grow(len(id) + len(data) + 32)
	if id != "" {
		s.buf = append(s.buf, "id: "...)
		s.buf = append(s.buf, id...)
		s.buf = append(s.buf, '\n')
	}
	s.buf = append(s.buf, "event: message\ndata: "...)
	s.buf = append(s.buf, data...)
	s.buf = append(s.buf, "\n\n"...)
}

// eventSeq appends one message event whose id is eventID(stream, seq),
// formatted in place.
func (s *sseWriter) eventSeq(stream string, seq uint64, data []byte) {
	s.grow(len(stream) + len(data) + 48)
	s.buf = append(s.buf, "id: "...)
	s.buf = append(s.buf, stream...)
	s.buf = append(s.buf, '-')
	s.buf = strconv.AppendUint(s.buf, seq, 10)
	s.buf = append(s.buf, "\nevent: message\ndata: "...)
	s.buf = append(s.buf, data...)
	s.buf = append(s.buf, "\n\n"...)
}

// priming appends the SEP-1699 priming event: an id, the reconnection
// delay and empty data.
func (s *sseWriter) priming(id string, retry time.Duration) {
	s.grow(len(id) + 48)
	s.buf = append(s.buf, "id: "...)
	s.buf = append(s.buf, id...)
	s.buf = append(s.buf, "\nretry: "...)
	s.buf = strconv.AppendInt(s.buf, retry.Milliseconds(), 10)
	s.buf = append(s.buf, "\ndata: \n\n"...)
}

func (s *sseWriter) comment() { s.buf = append(s.buf, ": keep-alive\n\n"...) }

// flush writes what was appended, within the write timeout: the deadline
// is moved only when less than half of it is left (moving it costs about
// as much as writing a small event), so each write gets between half the
// timeout and all of it.
func (s *sseWriter) flush() error { return s.write(true) }

// last writes what was appended as the response's final bytes, without
// flushing them: the handler returns next and net/http flushes them with
// the end of the chunked body, one write to the connection instead of two.
func (s *sseWriter) last() error { return s.write(false) }

// write writes what was appended, within the write timeout, and flushes
// it when flush is set.
func (s *sseWriter) write(flush bool) error {
	if len(s.buf) == 0 {
		return nil
	}
	if s.writeTimeout > 0 {
		if now := time.Now(); s.deadline.Sub(now) < s.writeTimeout/2 {
			s.deadline = now.Add(s.writeTimeout)
			_ = s.rc.SetWriteDeadline(s.deadline)
		}
	}
	_, err := s.w.Write(s.buf)
	if err == nil && flush {
		err = s.rc.Flush()
	}
	if cap(s.buf) > 64<<10 {
		s.buf = nil // do not pin a burst's worth of memory
	} else {
		s.buf = s.buf[:0]
	}
	return err
}

// keepAlive returns a ticker channel for keep-alive comments, or nil.
func (h *StreamableHTTPHandler) keepAlive() (<-chan time.Time, func()) {
	if h.opts.KeepAliveInterval <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(h.opts.KeepAliveInterval)
	return t.C, t.Stop
}

// eventID formats the SSE id of event seq of a stream. Ids are unique
// within a session and name their stream, so Last-Event-ID finds it.
func eventID(stream string, seq uint64) string {
	return stream + "-" + strconv.FormatUint(seq, 10)
}

// parseEventID parses an id made by eventID.
func parseEventID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 || len(id) > 64 {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(id[:i], 10, 64); err != nil {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return id[:i], seq, true
}

// streamEvent is one queued event of a legacy stream.
type streamEvent struct {
	seq       uint64
	data      []byte
	droppable bool
}

// eventStream is one logical SSE stream of a legacy session: the stream of
// one POSTed request, or the standalone GET stream. Producers (the request
// handler, the list-changed pump) never block on the client: events get
// the next sequence number, go to the EventStore and to a queue that the
// attached writer drains. At most one writer (an HTTP response) is attached
// at a time; a resuming GET takes over. Notifications are droppable: beyond
// NotificationBuffer queued ones the newest is dropped and counted.
// Requests and the final response are never dropped.
type eventStream struct {
	sess   *httpSession
	id     string
	signal chan struct{} // capacity 1: "the queue changed"

	mu       sync.Mutex
	seq      uint64
	q        []streamEvent
	queued   int // droppable events in q
	drops    int
	att      *attachment
	complete bool            // the final response is queued
	sctx     context.Context // the session's context, once looked up
	// lazy is set while the response of a POST stream is undecided (see
	// legacyStreamReply); a handler that returns then leaves its result
	// in res and err, for a JSON reply.
	lazy bool
	res  any
	err  error
}

// attachment is one writer of a stream; stop ends it.
type attachment struct {
	stop     chan struct{}
	stopOnce sync.Once
}

func (a *attachment) close() { a.stopOnce.Do(func() { close(a.stop) }) }

func newEventStream(sess *httpSession, id string) *eventStream {
	return &eventStream{sess: sess, id: id, signal: make(chan struct{}, 1)}
}

func (st *eventStream) wake() {
	select {
	case st.signal <- struct{}{}:
	default:
	}
}

// send queues one event and reports whether it was accepted.
func (st *eventStream) send(data []byte, droppable bool) bool {
	return st.push(data, droppable, false)
}

// finish queues the final response; the stream completes once it is
// written.
func (st *eventStream) finish(data []byte) { st.push(data, false, true) }

func (st *eventStream) push(data []byte, droppable, final bool) bool {
	h := st.sess.h
	st.mu.Lock()
	if st.complete {
		st.mu.Unlock()
		return false
	}
	if droppable && st.queued >= h.opts.NotificationBuffer {
		st.drops++
		st.mu.Unlock()
		h.dropped.Add(1)
		return false
	}
	st.seq++
	st.q = append(st.q, streamEvent{seq: st.seq, data: data, droppable: droppable})
	if droppable {
		st.queued++
	}
	st.complete = final
	if st.sctx == nil {
		// The session's context is made once and never replaced: look it
		// up (under the session's lock) once per stream, not per event.
		st.sctx = st.sess.context()
	}
	if sctx := st.sctx; sctx.Err() == nil {
		if err := h.store.Append(sctx, st.sess.id, st.id, st.seq, data); err != nil {
			h.storeErrs.Add(1)
			h.log.Warn("pmcp: event store append failed", "session", st.sess.id, "stream", st.id, "error", err)
		}
	}
	st.lazy = false // a message for the client: the response is a stream
	st.mu.Unlock()
	st.wake()
	return true
}

// finishLazy completes a stream whose response is still undecided with
// the handler's result, for a JSON reply, and reports whether it did;
// false means the stream is streamed and the caller finishes it.
func (st *eventStream) finishLazy(res any, err error) bool {
	st.mu.Lock()
	lazy := st.lazy
	if lazy {
		st.res, st.err, st.complete = res, err, true
	}
	st.mu.Unlock()
	if lazy {
		st.wake()
	}
	return lazy
}

// attach makes a the stream's writer, ending any previous one. It returns
// the last sequence number assigned so far and the sequence number just
// before the oldest queued event.
func (st *eventStream) attach() (a *attachment, upTo, floor uint64) {
	a = &attachment{stop: make(chan struct{})}
	st.mu.Lock()
	if st.att != nil {
		st.att.close()
	}
	st.att = a
	upTo = st.seq
	floor = st.seq
	if len(st.q) > 0 {
		floor = st.q[0].seq - 1
	}
	// A resuming GET takes over an undecided POST response, which then
	// ends with its priming event.
	st.lazy = false
	st.mu.Unlock()
	st.wake()
	return a, upTo, floor
}

// lastSeq is the sequence number of the stream's newest event.
func (st *eventStream) lastSeq() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.seq
}

func (st *eventStream) detach(a *attachment) {
	st.mu.Lock()
	if st.att == a {
		st.att = nil
	}
	st.mu.Unlock()
}

// take removes the queued events for writer a. ok is false when a is no
// longer the attached writer.
func (st *eventStream) take(a *attachment) (evs []streamEvent, complete, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.att != a {
		st.wake() // the signal may have been meant for the new writer
		return nil, false, false
	}
	evs, st.q, st.queued = st.q, nil, 0
	return evs, st.complete, true
}

// requestClose ends the attached writer (RequestHandlerExtra.CloseStream).
// It detaches at once, so nothing queued from now on reaches the closed
// response: it waits for the client to resume.
func (st *eventStream) requestClose() bool {
	st.mu.Lock()
	a := st.att
	st.att = nil
	st.lazy = false // an undecided POST response ends with its priming event
	st.mu.Unlock()
	if a == nil {
		return false
	}
	a.close()
	st.wake() // the POST's goroutine may be waiting to decide its response
	return true
}

// pumpOptions are the per-stream variations of pump.
type pumpOptions struct {
	written uint64    // sequence numbers up to this one are delivered
	events  *listener // list-changed events to turn into messages (standalone stream)
	idle    bool      // an idle stream: ends on Shutdown
}

// primingHold is how long the response of a POSTed legacy request stays
// undecided (see legacyStreamReply): a handler that returns sooner, having
// sent nothing, is answered with JSON; one still running gets its SSE
// stream and priming event then. A reply that comes within it gains
// nothing from being resumable; and under load, when the requests in
// flight queue behind each other, a quick handler's reply can take tens
// of milliseconds: with 256 legacy callers of echo through pmcp gateway
// (the bench's gateway leg) a 5 ms hold streamed 47,850 replies of
// 49,003, this one 243 of 57,360.
const primingHold = 100 * time.Millisecond

// pump writes the stream's events to sw until the stream completes, the
// writer is stopped (CloseStream, take-over), the client goes away, the
// session ends, or (for idle streams) the handler shuts down.
func (h *StreamableHTTPHandler) pump(ctx context.Context, sw *sseWriter, st *eventStream, a *attachment, po pumpOptions) {
	tick, stopTick := h.keepAlive()
	defer stopTick()
	var drain <-chan struct{}
	if po.idle {
		drain = h.drain
	}
	sess := st.sess
	sessDone, ending := sess.context().Done(), false
	var ready <-chan struct{}
	if po.events != nil {
		ready = po.events.ready
	}
	for {
		// take gets everything queued so far: a signal still pending from
		// those pushes (the list-changed case below queues through send,
		// which signals) would only cost an empty round of this loop.
		select {
		case <-st.signal:
		default:
		}
		evs, complete, ok := st.take(a)
		if !ok {
			_ = sw.last() // a replay may be buffered
			return
		}
		for _, ev := range evs {
			if ev.seq <= po.written {
				continue
			}
			sw.eventSeq(st.id, ev.seq, ev.data)
			po.written = ev.seq
		}
		if complete || ending {
			_ = sw.last()
			return
		}
		if err := sw.flush(); err != nil {
			return
		}
		sess.touch()
		select {
		case <-a.stop:
			return // CloseStream or a take-over: the client resumes elsewhere
		case <-st.signal:
		case <-ctx.Done():
			return
		case <-sessDone:
			if h.ctx.Err() != nil {
				return // Close: do not wait on slow clients
			}
			// Write what was queued before the session ended, then stop.
			ending = true
		case <-drain:
			return
		case <-ready:
			_ = po.events.drain(func(ev event) error {
				h.sendListEvent(st, ev)
				return nil
			})
		case <-tick:
			sw.comment()
		}
	}
}

// sendListEvent turns a list-changed or resource-updated event into a
// notification on a legacy stream.
func (h *StreamableHTTPHandler) sendListEvent(st *eventStream, ev event) {
	if ev.kind != resourceUpdated {
		// The same bytes for every stream: nothing of a legacy list change
		// depends on the session (the SSE id is added by the writer).
		st.send(legacyListChanged[ev.kind], true)
		return
	}
	if b, err := encodeMessage(noID, listMethods[ev.kind], &ResourceUpdatedParams{URI: ev.uri}); err == nil {
		st.send(b, true)
	}
}

// legacyListChanged holds the encoded legacy list-changed notifications,
// by kind. They are shared by every stream and never written to.
var legacyListChanged = func() (m [resourceUpdated][]byte) {
	for k := range m {
		b, err := encodeMessage(noID, listMethods[k], struct{}{})
		if err != nil {
			panic(err)
		}
		m[k] = b
	}
	return m
}()

// logDrops logs once per request how many notifications a slow client
// missed.
func (st *eventStream) logDrops(req *jsonrpc.Request) {
	st.mu.Lock()
	n := st.drops
	st.mu.Unlock()
	if n > 0 {
		st.sess.h.log.Warn("pmcp: dropped notifications for a slow HTTP client", "session", st.sess.id, "method", req.Method, "id", req.ID.String(), "dropped", n)
	}
}
