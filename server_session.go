package pmcp

import (
	"context"
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
	// MaxSessionEndFuncs entries.
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
// session already ended, and refuses (false) past MaxSessionEndFuncs.
func (ss *session) addOnEnd(f func()) bool {
	ss.mu.Lock()
	if ss.finished {
		ss.mu.Unlock()
		f()
		return true
	}
	m := ss.moreLocked()
	if len(m.onEnd) >= MaxSessionEndFuncs {
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
