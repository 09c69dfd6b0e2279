package pmcp

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Legacy (2025-11-25) sessions across replicas.
//
// A legacy session is live state in one process: handler goroutines
// blocked on an elicitation's answer, the contexts notifications/cancelled
// must reach, POST streams held open. Rather than spreading that state,
// replicas keep each session in the process that created it (its owner)
// and move requests to it: a replica that receives a request for a
// session it does not hold asks its SessionRouter, which forwards the
// whole HTTP request to the owner. When the owner is gone, the replica
// adopts the session from the SessionStore's record and serves it from
// then on, replaying past events from the shared EventStore.

var (
	// ErrNoSession is returned by a SessionStore for an id it holds no
	// record of; the request gets 404, as for an unknown session.
	ErrNoSession = errors.New("pmcp: no such session")
	// ErrSessionOwned is returned by SessionStore.AdoptSession when the
	// session's owner is still alive: the request gets 503 with
	// Retry-After, since its router could not reach the owner.
	ErrSessionOwned = errors.New("pmcp: the session belongs to a live replica")
	// ErrSharedKeysRequired is returned by NewServer when an EventBus is
	// configured without RequestStateKeys: each replica would then seal
	// requestStates with its own random key, which the others reject.
	ErrSharedKeysRequired = errors.New("pmcp: replicas need RequestStateKeys shared by every replica")
)

// SessionRecord is what a replica needs to take over a legacy session
// whose owner is gone. It holds no secret: Principal is the binding the
// handler computes (a subject, or a token's SHA-256, or a client id).
type SessionRecord struct {
	// ID is the Mcp-Session-Id.
	ID string
	// Principal is who the session is bound to.
	Principal string
	// InitParams are the params of the initialize request, as received.
	InitParams []byte
	// Epoch counts the adoptions of the session. An adopting replica
	// numbers its new streams from Epoch<<32, so that their event ids
	// never collide with those of earlier owners in the EventStore.
	Epoch uint32
}

// SessionStore shares the records of legacy sessions between replicas.
// Nil (the default) means one process: sessions live in its memory only.
// Implementations must be safe for concurrent use.
type SessionStore interface {
	// NewSessionID returns a fresh, unguessable session id (at least 128
	// random bits). Implementations for replicas name the replica in it,
	// so that a load balancer can route on the id (see the README).
	NewSessionID() string
	// SaveSession records a session this replica has just initialized,
	// with this replica as its owner.
	SaveSession(ctx context.Context, rec SessionRecord) error
	// AdoptSession makes this replica the owner of a session whose owner
	// is gone (or is this replica, restarted) and returns its record with
	// Epoch incremented. It returns ErrNoSession when there is no record
	// and ErrSessionOwned when the owner is alive.
	AdoptSession(ctx context.Context, id string) (SessionRecord, error)
	// DeleteSession removes the record of a session that ended (DELETE,
	// idle expiry). Sessions of a handler that closes keep their records:
	// another replica adopts them.
	DeleteSession(ctx context.Context, id string) error
}

// SessionRouter serves the requests naming a legacy session this
// replica does not hold, typically by forwarding them to the replica that
// does. It runs after the Host, Origin and Authenticate checks; a POST's
// body can be read again from r.Body. It reports whether it served the
// request; false lets the handler adopt the session through the
// SessionStore, or answer 404.
type SessionRouter interface {
	RouteSession(w http.ResponseWriter, r *http.Request, sessionID string) bool
}

// SessionRouterFunc adapts a function to SessionRouter.
type SessionRouterFunc func(w http.ResponseWriter, r *http.Request, sessionID string) bool

// RouteSession calls f.
func (f SessionRouterFunc) RouteSession(w http.ResponseWriter, r *http.Request, sessionID string) bool {
	return f(w, r, sessionID)
}

// replicated reports whether sessions are shared with other replicas.
func (h *StreamableHTTPHandler) replicated() bool {
	return h.opts.SessionRouter != nil || h.opts.SessionStore != nil
}

// remoteSession finds a session this replica does not hold: the router
// serves the request (handled), or the session is adopted, or it is
// unknown (nil, false).
func (h *StreamableHTTPHandler) remoteSession(w http.ResponseWriter, r *http.Request, id string) (sess *httpSession, handled bool) {
	if rt := h.opts.SessionRouter; rt != nil {
		rr := r
		if r.Method == http.MethodGet {
			// A forwarded GET stream is idle like a local one: it ends on
			// Shutdown, and the client resumes it through another replica.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(h.drainCtx, cancel)
			defer stop()
			rr = r.WithContext(ctx)
		}
		if rt.RouteSession(w, rr, id) {
			return nil, true
		}
	}
	st := h.opts.SessionStore
	if st == nil {
		return nil, false
	}
	rec, err := st.AdoptSession(r.Context(), id)
	switch {
	case errors.Is(err, ErrNoSession):
		return nil, false
	case errors.Is(err, ErrSessionOwned):
		refuseReplicaUnreachable.write(w, &h.refusals, noID)
		return nil, true
	case err != nil:
		h.log.Warn("pmcp: session store unavailable", "session", id, "error", err)
		refuseSessionStore.write(w, &h.refusals, noID)
		return nil, true
	}
	if rec.ID != id {
		return nil, false
	}
	sess = h.adopt(r.Context(), rec)
	if sess == nil {
		refuseTooManySessionsAdopting.write(w, &h.refusals, noID)
		return nil, true
	}
	return sess, false
}

// adopt rebuilds a session from its record: the handshake is replayed
// from the initialize params, new streams are numbered past the earlier
// owners' ones, and the standalone stream continues after its stored
// events. Subscriptions and the log level are not carried over. It
// returns nil when MaxSessions is reached.
func (h *StreamableHTTPHandler) adopt(ctx context.Context, rec SessionRecord) *httpSession {
	var base uint64
	if evs, err := h.store.After(ctx, rec.ID, standaloneStreamID, 0); err == nil && len(evs) > 0 {
		base = evs[len(evs)-1].Seq
	}
	sess := h.initSession(rec.ID, rec.Principal)
	io := sess.ioLocked() // not shared yet: no lock needed
	io.nextStream = uint64(rec.Epoch) << 32
	io.standaloneBase = base
	if _, err := h.s.initialize(&jsonrpc.Request{Method: MethodInitialize, Params: jsontext.Value(rec.InitParams)}, &sess.state); err != nil {
		h.log.Warn("pmcp: cannot replay the handshake of an adopted session", "session", rec.ID, "error", err)
	}
	h.smu.Lock()
	if v, ok := h.sessions.Load(rec.ID); ok {
		// A concurrent request adopted it first.
		h.smu.Unlock()
		return v.(*httpSession)
	}
	if max := h.opts.MaxSessions; max > 0 && h.nSessions.Load() >= int64(max) {
		h.smu.Unlock()
		return nil
	}
	h.sessions.Store(rec.ID, sess)
	h.nSessions.Add(1)
	h.startReaperLocked()
	h.smu.Unlock()
	h.log.Info("pmcp: adopted a session from another replica", "session", rec.ID, "epoch", strconv.FormatUint(uint64(rec.Epoch), 10))
	return sess
}

// saveSession records a session just initialized; false when the store
// failed (the initialize then fails too).
func (h *StreamableHTTPHandler) saveSession(ctx context.Context, sess *httpSession, params jsontext.Value) bool {
	st := h.opts.SessionStore
	if st == nil {
		return true
	}
	// The request's context is cancelled once its handler returned.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultSessionStoreTimeout)
	defer cancel()
	err := st.SaveSession(ctx, SessionRecord{ID: sess.id, Principal: sess.principal, InitParams: bytes.Clone(params)})
	if err != nil {
		h.log.Warn("pmcp: session store unavailable at initialize", "session", sess.id, "error", err)
		return false
	}
	return true
}

// errSessionStore fails an initialize whose session could not be recorded
// (refuseSessionNotSaved).
var errSessionStore = refuseSessionNotSaved.rpcError()

// forgetSession deletes the record of a session that ended for good.
func (h *StreamableHTTPHandler) forgetSession(id string) {
	if st := h.opts.SessionStore; st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), defaultSessionStoreTimeout)
		defer cancel()
		if err := st.DeleteSession(ctx, id); err != nil {
			h.log.Warn("pmcp: session store cleanup failed", "session", id, "error", err)
		}
	}
}
