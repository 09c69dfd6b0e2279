package pmcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// noID is the id of notifications.
var noID jsonrpc.ID

var (
	errSessionEnded = errors.New("pmcp: the HTTP session ended")
	errStreamDone   = errors.New("pmcp: the request's stream is complete")
)

// standaloneStreamID names the GET stream of a session; POST streams are
// numbered from 1.
const standaloneStreamID = "0"

// httpSession is one legacy Streamable HTTP session: the dispatcher's
// session state plus the transport's streams and outgoing calls.
type httpSession struct {
	h         *StreamableHTTPHandler
	id        string
	principal string
	lastUsed  atomic.Int64 // unix nanoseconds
	active    atomic.Int32 // requests in flight plus attached writers
	running   atomic.Int32 // requests in flight, bounded by maxRunning
	// maxRunning bounds the requests in flight (MaxConcurrentRequests);
	// 0 means unbounded.
	maxRunning int32

	mu    sync.Mutex
	ended bool
	// The requests in flight, for notifications/cancelled: the first one
	// in the inline slot (first*), the others in io.inflight. Idle
	// sessions hold no map.
	hasFirst    bool
	firstID     jsonrpc.ID
	firstCancel context.CancelFunc
	// io holds what only sessions with streams, server-to-client calls or
	// concurrent requests need; made on first use (guarded by mu), so an
	// idle session that only served JSON requests holds none of it.
	io *sessionIO

	state session // the legacy-era state; the dispatcher gets &state
}

// sessionIO is the part of an httpSession made on first use; see
// httpSession.io.
type sessionIO struct {
	// ctx is cancelled when the session ends; see context.
	ctx      context.Context
	cancel   context.CancelFunc
	inflight map[jsonrpc.ID]context.CancelFunc // beyond the inline first
	streams  map[string]*eventStream           // streams of requests still running
	// nextStream numbers the request streams; standaloneBase is the
	// sequence number the standalone stream starts after: both non-zero
	// in a session adopted from another replica.
	nextStream     uint64
	standaloneBase uint64
	standalone     *eventStream
	listener       *listener
	pending        *rpcconn.Pending // server-to-client calls; made on first use
}

// ioLocked returns sess.io, making it; sess.mu is held.
func (sess *httpSession) ioLocked() *sessionIO {
	if sess.io == nil {
		sess.io = new(sessionIO)
	}
	return sess.io
}

func (sess *httpSession) touch() { sess.lastUsed.Store(sess.h.now().UnixNano()) }

// newSession creates and registers a session, or returns nil when
// MaxSessions is reached.
func (h *StreamableHTTPHandler) newSession(principal string) *httpSession {
	id := ""
	if st := h.opts.SessionStore; st != nil {
		id = st.NewSessionID()
	} else {
		id = newSessionID()
	}
	sess := h.initSession(id, principal)
	h.smu.Lock()
	if max := h.opts.MaxSessions; max > 0 && h.nSessions.Load() >= int64(max) {
		h.smu.Unlock()
		return nil
	}
	h.sessions.Store(sess.id, sess)
	h.nSessions.Add(1)
	h.startReaperLocked()
	h.smu.Unlock()
	return sess
}

// startReaperLocked starts the idle-session reaper once; h.smu is held.
func (h *StreamableHTTPHandler) startReaperLocked() {
	if !h.reaperStarted && h.opts.SessionIdleTimeout > 0 {
		h.reaperStarted = true
		h.bgWG.Add(1)
		go h.reapLoop()
	}
}

// initSession makes a session, not yet registered.
func (h *StreamableHTTPHandler) initSession(id, principal string) *httpSession {
	sess := &httpSession{h: h, id: id, principal: principal}
	sess.state.id = sess.id
	sess.state.notify = sess.notifySession
	if n := h.s.opts.MaxConcurrentRequests; n >= 0 {
		if n == 0 {
			n = DefaultMaxConcurrentRequests
		}
		sess.maxRunning = int32(min(n, 1<<30))
	}
	sess.touch()
	return sess
}

// lookupSession finds the session of a request, or answers 400 (no id, or
// a repeated or non-legacy MCP-Protocol-Version) or 404 (unknown, ended,
// or bound to another principal) and returns nil.
func (h *StreamableHTTPHandler) lookupSession(w http.ResponseWriter, r *http.Request, auth authResult) *httpSession {
	id, ok := headerValue(r.Header, headerSessionID)
	if !ok || id == "" {
		refuseNoSession.write(w, &h.refusals, noID)
		return nil
	}
	var sess *httpSession
	if v, ok := h.sessions.Load(id); ok {
		sess = v.(*httpSession)
	} else if h.replicated() && len(id) <= maxSessionIDLen {
		var handled bool
		if sess, handled = h.remoteSession(w, r, id); handled {
			return nil
		}
	}
	if sess == nil || !principalMatches(sess.principal, auth.info, auth.ctx) {
		refuseSessionNotFound.write(w, &h.refusals, noID)
		return nil
	}
	if headerRepeated(r.Header, headerProtocolVersion) {
		refuseRepeatedVersion.write(w, &h.refusals, noID)
		return nil
	}
	if v, ok := headerValue(r.Header, headerProtocolVersion); ok && EraOf(v) != EraLegacy {
		refuseVersion.write(w, &h.refusals, noID, v)
		return nil
	}
	sess.touch()
	return sess
}

// maxSessionIDLen bounds the session ids handed to a SessionRouter or
// SessionStore; longer ones are unknown.
const maxSessionIDLen = 256

// endSession removes the session and ends it for good (DELETE, idle
// expiry, a failed initialize).
func (h *StreamableHTTPHandler) endSession(sess *httpSession) {
	h.smu.Lock()
	removed := h.sessions.CompareAndDelete(sess.id, sess)
	if removed {
		h.nSessions.Add(-1)
	}
	h.smu.Unlock()
	sess.end(false)
	if removed {
		h.forgetSession(sess.id)
	}
}

func (h *StreamableHTTPHandler) endAllSessions() {
	h.smu.Lock()
	all := make([]*httpSession, 0, h.nSessions.Load())
	h.sessions.Range(func(_, v any) bool {
		all = append(all, v.(*httpSession))
		return true
	})
	h.sessions.Clear()
	h.nSessions.Store(0)
	h.smu.Unlock()
	// With a SessionStore the sessions outlive this handler: another
	// replica adopts them and replays their stored events.
	keep := h.opts.SessionStore != nil
	for _, sess := range all {
		sess.end(keep)
	}
}

// context returns the session's context, cancelled when the session ends
// (or the handler closes). It is made on first use: sessions that only
// serve JSON requests never need one, and keep their memory.
func (sess *httpSession) context() context.Context {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	io := sess.ioLocked()
	if io.ctx == nil {
		io.ctx, io.cancel = context.WithCancel(sess.h.ctx)
		if sess.ended {
			io.cancel()
		}
	}
	return io.ctx
}

// end cancels the session's requests, ends its streams and calls, and
// drops its stored events unless keepEvents.
func (sess *httpSession) end(keepEvents bool) {
	defer sess.state.finish()
	sess.mu.Lock()
	if sess.ended {
		sess.mu.Unlock()
		return
	}
	sess.ended = true
	var (
		l        *listener
		p        *rpcconn.Pending
		cancel   context.CancelFunc
		requests []context.CancelFunc
	)
	if sess.hasFirst {
		requests = append(requests, sess.firstCancel)
	}
	if io := sess.io; io != nil {
		l, p, cancel = io.listener, io.pending, io.cancel
		io.listener = nil
		for _, c := range io.inflight {
			requests = append(requests, c)
		}
	}
	sess.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	for _, c := range requests {
		c()
	}
	if l != nil {
		sess.h.s.listeners.remove(l)
	}
	if p != nil {
		p.CloseAll(errSessionEnded)
	}
	if keepEvents {
		return
	}
	if err := sess.h.store.DeleteSession(context.Background(), sess.id); err != nil {
		sess.h.log.Warn("pmcp: event store cleanup failed", "session", sess.id, "error", err)
	}
}

// reapLoop ends idle sessions until Close.
func (h *StreamableHTTPHandler) reapLoop() {
	defer h.bgWG.Done()
	every := min(max(h.opts.SessionIdleTimeout/4, 100*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.reaperStop:
			return
		case <-t.C:
			h.reapIdle(h.now())
		}
	}
}

// reapIdle ends the sessions idle since before now-SessionIdleTimeout and
// returns how many.
func (h *StreamableHTTPHandler) reapIdle(now time.Time) int {
	if h.opts.SessionIdleTimeout <= 0 {
		return 0
	}
	cutoff := now.Add(-h.opts.SessionIdleTimeout).UnixNano()
	var idle []*httpSession
	h.sessions.Range(func(_, v any) bool {
		if sess := v.(*httpSession); sess.active.Load() == 0 && sess.lastUsed.Load() < cutoff {
			idle = append(idle, sess)
		}
		return true
	})
	for _, sess := range idle {
		h.endSession(sess)
		h.expired.Add(1)
	}
	return len(idle)
}

// acquire takes one of the session's request slots without waiting;
// false when all are taken.
func (sess *httpSession) acquire() bool {
	if max := sess.maxRunning; max > 0 {
		for {
			n := sess.running.Load()
			if n >= max {
				return false
			}
			if sess.running.CompareAndSwap(n, n+1) {
				break
			}
		}
	}
	sess.active.Add(1)
	return true
}

func (sess *httpSession) release() {
	if sess.maxRunning > 0 {
		sess.running.Add(-1)
	}
	sess.active.Add(-1)
	sess.touch()
}

// track registers a request, whose context cancel cancels, until untrack:
// for notifications/cancelled, and so that it is cancelled when the
// session ends (at once if it already has). It reports false when a
// request with the same id is still in flight.
func (sess *httpSession) track(id jsonrpc.ID, cancel context.CancelFunc) bool {
	sess.mu.Lock()
	if sess.hasFirst && sess.firstID == id {
		sess.mu.Unlock()
		return false
	}
	if io := sess.io; io != nil {
		if _, dup := io.inflight[id]; dup {
			sess.mu.Unlock()
			return false
		}
	}
	if !sess.hasFirst {
		sess.firstID, sess.firstCancel, sess.hasFirst = id, cancel, true
	} else {
		io := sess.ioLocked()
		if io.inflight == nil {
			io.inflight = make(map[jsonrpc.ID]context.CancelFunc)
		}
		io.inflight[id] = cancel
	}
	ended := sess.ended
	sess.mu.Unlock()
	if ended || sess.h.ctx.Err() != nil {
		cancel()
	}
	return true
}

func (sess *httpSession) untrack(id jsonrpc.ID) {
	sess.mu.Lock()
	if sess.hasFirst && sess.firstID == id {
		sess.firstID, sess.firstCancel, sess.hasFirst = jsonrpc.ID{}, nil, false
	} else if io := sess.io; io != nil {
		delete(io.inflight, id)
		if len(io.inflight) == 0 {
			io.inflight = nil // idle sessions hold no map
		}
	}
	sess.mu.Unlock()
}

func (sess *httpSession) cancelInflight(id jsonrpc.ID) {
	sess.mu.Lock()
	var cancel context.CancelFunc
	if sess.hasFirst && sess.firstID == id {
		cancel = sess.firstCancel
	} else if io := sess.io; io != nil {
		cancel = io.inflight[id]
	}
	sess.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// newStream registers the stream of a new POSTed request.
func (sess *httpSession) newStream() *eventStream {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	io := sess.ioLocked()
	io.nextStream++
	st := newEventStream(sess, strconv.FormatUint(io.nextStream, 10))
	if io.streams == nil {
		io.streams = make(map[string]*eventStream)
	}
	io.streams[st.id] = st
	return st
}

func (sess *httpSession) removeStream(st *eventStream) {
	sess.mu.Lock()
	if io := sess.io; io != nil {
		delete(io.streams, st.id)
	}
	sess.mu.Unlock()
}

// liveStream returns a stream that can still receive events, or nil.
func (sess *httpSession) liveStream(id string) *eventStream {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	io := sess.io
	if io == nil {
		return nil
	}
	if id == standaloneStreamID {
		return io.standalone
	}
	return io.streams[id]
}

// standaloneStream returns the GET stream, creating it (and registering
// the session for list-changed events) on first use; nil once ended.
func (sess *httpSession) standaloneStream() (*eventStream, *listener) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return nil, nil
	}
	io := sess.ioLocked()
	if io.standalone == nil {
		io.standalone = newEventStream(sess, standaloneStreamID)
		io.standalone.seq = io.standaloneBase
		io.listener = sess.h.s.newListener(sess.state.accept)
		sess.h.s.listeners.add(io.listener)
	}
	return io.standalone, io.listener
}

func (sess *httpSession) standaloneOrNil() *eventStream {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.io == nil {
		return nil
	}
	return sess.io.standalone
}

// calls returns the tracker of server-to-client calls, nil once ended.
func (sess *httpSession) calls(create bool) *rpcconn.Pending {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return nil
	}
	if !create {
		if sess.io == nil {
			return nil
		}
		return sess.io.pending
	}
	io := sess.ioLocked()
	if io.pending == nil {
		io.pending = rpcconn.NewPending()
	}
	return io.pending
}

// notifyOn sends request-related notifications on a stream (droppable).
func notifyOn(st *eventStream) func(ctx context.Context, method string, params any) error {
	return func(_ context.Context, method string, params any) error {
		b, err := encodeMessage(noID, method, params)
		if err != nil {
			return err
		}
		st.send(b, true)
		return nil
	}
}

// notifySession sends a notification that belongs to no request on the
// standalone GET stream: the only way a legacy Streamable HTTP server can
// reach its client between requests.
func (sess *httpSession) notifySession(_ context.Context, method string, params any) error {
	sess.mu.Lock()
	var st *eventStream
	if sess.io != nil {
		st = sess.io.standalone
	}
	ended := sess.ended
	sess.mu.Unlock()
	switch {
	case ended:
		return errSessionEnded
	case st == nil:
		return fmt.Errorf("%w: the client has no standalone GET stream open for %s", ErrNoPeer, method)
	}
	b, err := encodeMessage(noID, method, params)
	if err != nil {
		return err
	}
	if !st.send(b, true) {
		return fmt.Errorf("pmcp: %s dropped: the client's stream is full", method)
	}
	return nil
}

// callOn sends server-to-client requests on a stream; the answers arrive
// as separate POSTs and are matched by id. While the request's calls wait
// for the client, the request does not count against maxRunning, as a
// stream connection's handler does not while it waits in Conn.Call: a
// session whose requests wait for users would otherwise refuse all else.
//
// waiting counts the request's calls waiting for the client; it lives in
// the request's reqState, so the back-channel costs no allocation of its
// own.
func (sess *httpSession) callOn(st *eventStream, waiting *atomic.Int32) func(ctx context.Context, method string, params any) (jsontext.Value, error) {
	return func(ctx context.Context, method string, params any) (jsontext.Value, error) {
		p := sess.calls(true)
		if p == nil {
			return nil, errSessionEnded
		}
		id, ch := p.Add()
		b, err := encodeMessage(id, method, params)
		if err != nil {
			p.Forget(id)
			return nil, err
		}
		// The slot is freed before the call is sent: the client may answer
		// it, or send another request, as soon as it arrives.
		if sess.maxRunning > 0 {
			if waiting.Add(1) == 1 {
				sess.running.Add(-1)
			}
			defer func() {
				if waiting.Add(-1) == 0 {
					sess.running.Add(1)
				}
			}()
		}
		if !st.send(b, false) {
			// The request is over: a back-channel kept beyond it reaches
			// the client on the session's standalone GET stream, where a
			// server may send requests unrelated to the client's, when
			// the client has one open.
			if sa := sess.standaloneOrNil(); sa == nil || sa == st || !sa.send(b, false) {
				p.Forget(id)
				return nil, errStreamDone
			}
		}
		return p.Await(ctx, id, ch)
	}
}

// requestCtx is the context of a legacy request: a disconnect is not a
// cancellation in this era, so it ends with the session (end cancels the
// tracked requests) or with notifications/cancelled, not with the HTTP
// request.
func (sess *httpSession) requestCtx(r *http.Request) (ctx context.Context, cancel context.CancelFunc) {
	return context.WithCancel(context.WithoutCancel(r.Context()))
}

// finish ends a request registered by requestCtx, acquire and track.
func (sess *httpSession) finish(id jsonrpc.ID, cancel context.CancelFunc) {
	sess.untrack(id)
	cancel()
	sess.release()
}

// legacyPost serves a POSTed legacy request or notification.
func (h *StreamableHTTPHandler) legacyPost(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, auth authResult, rs *reqState) {
	if req.IsNotification() {
		sess := h.lookupSession(w, r, auth)
		if sess == nil {
			return
		}
		h.s.notification(r.Context(), h.notificationOf(r, req, auth, sess.id), func(context.Context) { h.legacyNotification(sess, req) })
		w.WriteHeader(http.StatusAccepted)
		return
	}
	jsonOK, sseOK := accepts(r)
	useSSE := sseOK && !h.opts.JSONResponse
	if !useSSE && !jsonOK {
		refuseNotAcceptable.write(w, &h.refusals, noID)
		return
	}
	isInit := req.Method == MethodInitialize
	var sess *httpSession
	if isInit {
		if headerRepeated(r.Header, headerProtocolVersion) {
			refuseInitRepeatedVersion.write(w, &h.refusals, req.ID)
			return
		}
		principal, bindable := auth.principal()
		if !bindable {
			refuseNoPrincipal.write(w, &h.refusals, req.ID)
			return
		}
		if sess = h.newSession(principal); sess == nil {
			refuseTooManySessions.write(w, &h.refusals, req.ID)
			return
		}
	} else if sess = h.lookupSession(w, r, auth); sess == nil {
		return
	}
	if !h.httpScopeCheck(w, EraLegacy, req, rs, auth) {
		return
	}
	if !sess.acquire() {
		refuseTooManyInFlight.write(w, &h.refusals, req.ID)
		return
	}
	ctx, cancel := sess.requestCtx(r)
	if !sess.track(req.ID, cancel) {
		cancel()
		sess.release()
		refuseDuplicateID.write(w, &h.refusals, req.ID)
		return
	}
	env := &rs.env
	env.session, env.sessionID, env.authInfo, env.authCtx = &sess.state, sess.id, auth.info, auth.ctx

	if !useSSE {
		// JSON reply: request-related messages can only reach the client
		// over its standalone GET stream, if it has one.
		if st := sess.standaloneOrNil(); st != nil {
			env.notify = notifyOn(st)
			env.call = sess.callOn(st, &rs.peerWaiting)
		}
		res, err := h.s.handle(ctx, req, env)
		sess.finish(req.ID, cancel)
		h.legacyJSONReply(ctx, w, req, rs, sess, isInit, res, err)
		return
	}
	h.legacyStreamReply(ctx, cancel, w, r, req, rs, sess, isInit, jsonOK)
}

// legacyNotification handles a client notification; it must stay quick.
func (h *StreamableHTTPHandler) legacyNotification(sess *httpSession, req *jsonrpc.Request) {
	h.s.onNotification(req, sess.context, sess.cancelInflight)
}

// legacyClientResponse routes the client's answer to a server-to-client
// request to the call waiting for it.
func (h *StreamableHTTPHandler) legacyClientResponse(w http.ResponseWriter, r *http.Request, resp *jsonrpc.Response, auth authResult) {
	sess := h.lookupSession(w, r, auth)
	if sess == nil {
		return
	}
	if p := sess.calls(false); p != nil {
		p.Resolve(resp)
	}
	w.WriteHeader(http.StatusAccepted)
}
