package pmcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
)

// session is the legacy-era state of one connection (a stdio or in-memory
// stream, or one HTTP session): what the initialize handshake negotiated,
// the level set by logging/setLevel and the resource subscriptions. Reads on
// the request path are lock-free.
type session struct {
	id       string
	hs       atomic.Pointer[handshake]
	logLevel atomic.Uint32 // LoggingLevel; LevelUnset until setLevel

	mu       sync.Mutex
	finished bool // guarded by mu
	// more holds what few sessions use, made on first use (guarded by mu):
	// an idle session does not pay for it.
	more *sessionMore

	// notify sends a notification that belongs to no request, on the
	// session's own channel (the connection on stdio, the standalone GET
	// stream on Streamable HTTP). Set by the transport before any request
	// is served; nil when there is none.
	notify func(ctx context.Context, method string, params any) error
}

// sessionMore is the part of a session made on first use.
type sessionMore struct {
	subs uriSet // subscribed resource URIs
	// taskOwner owns the session's tasks without authentication.
	taskOwner string
	// onEnd runs once when the session ends (see OnSessionEnd), at most
	// maxSessionEndFuncs entries.
	onEnd []func()
}

// moreLocked returns ss.more, making it; ss.mu is held.
func (ss *session) moreLocked() *sessionMore {
	if ss.more == nil {
		ss.more = new(sessionMore)
	}
	return ss.more
}

// addOnEnd registers f to run at finish. It runs f at once when the
// session already ended, and refuses (false) past maxSessionEndFuncs.
func (ss *session) addOnEnd(f func()) bool {
	ss.mu.Lock()
	if ss.finished {
		ss.mu.Unlock()
		f()
		return true
	}
	m := ss.moreLocked()
	if len(m.onEnd) >= maxSessionEndFuncs {
		ss.mu.Unlock()
		return false
	}
	m.onEnd = append(m.onEnd, f)
	ss.mu.Unlock()
	return true
}

// finish marks the session ended (its connection closed, or its HTTP
// session was deleted, expired or its handler closed) and runs the
// functions registered with OnSessionEnd, in order. Idempotent.
func (ss *session) finish() {
	ss.mu.Lock()
	if ss.finished {
		ss.mu.Unlock()
		return
	}
	ss.finished = true
	var fs []func()
	if m := ss.more; m != nil {
		fs, m.onEnd = m.onEnd, nil
	}
	ss.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// handshake is immutable once stored.
type handshake struct {
	pc *ProtocolContext
}

func (ss *session) protocol() *ProtocolContext {
	if h := ss.hs.Load(); h != nil {
		return h.pc
	}
	return nil
}

// subscribe adds uri to the session's subscriptions within lim.
func (ss *session) subscribe(uri string, lim subLimits) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.moreLocked().subs.add(uri, lim, "resources/subscribe")
}

func (ss *session) unsubscribe(uri string) {
	ss.mu.Lock()
	if m := ss.more; m != nil {
		m.subs.remove(uri)
	}
	ss.mu.Unlock()
}

func (ss *session) subscribed(uri string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.more != nil && ss.more.subs.has(uri)
}

// accept is the legacy listener filter: list changes go to every
// initialized session, resource updates to subscribers.
func (ss *session) accept(ev event) bool {
	if ss.hs.Load() == nil {
		return false
	}
	if ev.kind == resourceUpdated {
		return ss.subscribed(ev.uri)
	}
	return true
}

// taskOwnerID is the owner of the session's tasks when there is no
// authentication. A session with an id (Streamable HTTP) gets a one-way
// hash of it: every replica derives the same owner, so the tasks stay
// reachable when another replica adopts the session, and the stored owner
// does not reveal the id (which is 128 random bits). A session without an
// id gets a random owner.
func (ss *session) taskOwnerID() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	m := ss.moreLocked()
	if m.taskOwner == "" {
		if ss.id != "" {
			h := sha256.Sum256([]byte("pmcp task owner\x00" + ss.id))
			m.taskOwner = "session:" + hex.EncodeToString(h[:18])
		} else {
			var b [18]byte
			_, _ = rand.Read(b[:])
			m.taskOwner = "session:" + hex.EncodeToString(b[:])
		}
	}
	return m.taskOwner
}
