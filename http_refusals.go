package pmcp

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// httpRefusal is one way the Streamable HTTP transport refuses a
// request: the HTTP status, and the JSON-RPC error response that is the
// body. Every refusal is a named value below, written by write, the one
// writer; no status is spelled at a call site. TestHTTPRefusals records
// the bytes each one writes.
type httpRefusal struct {
	// reason is what StreamableHTTPStats.Refusals counts it under.
	reason refusalReason
	status int
	code   int64
	// msg is the error message; a refusal that takes arguments has fmt
	// verbs in it, filled by write's args.
	msg string
	// withID: the body carries the id passed to write (the request's);
	// else its id is null. Which refusals carry it is a fact of each row,
	// kept as clients see it today.
	withID bool
	// given: the body's error is write's one argument, a *jsonrpc.Error
	// built by its owner (the decoder, scopeRefusal); code and msg are
	// unused.
	given bool
	// allow and retryAfter are the Allow and Retry-After headers; empty
	// means none.
	allow      string
	retryAfter string
}

// The refusals of ServeHTTP and servePost, before a message is decoded.
var (
	refuseHostForbidden = httpRefusal{reason: reasonHost, status: http.StatusForbidden, code: jsonrpc.CodeInvalidRequest,
		msg: "Forbidden: Host not allowed (by default only localhost, 127.0.0.0/8 and [::1], with an optional port, are accepted; " +
			"list other names in StreamableHTTPOptions.AllowedHosts)"}
	refuseOriginForbidden = httpRefusal{reason: reasonOrigin, status: http.StatusForbidden, code: jsonrpc.CodeInvalidRequest, msg: "Forbidden: Origin not allowed"}
	// refuseShuttingDown: Shutdown or Close has begun (no Retry-After: the
	// client goes to another server).
	refuseShuttingDown   = httpRefusal{reason: reasonShuttingDown, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, msg: "server is shutting down"}
	refuseModernOnlyPOST = httpRefusal{reason: reasonMethod, status: http.StatusMethodNotAllowed, code: jsonrpc.CodeInvalidRequest, allow: http.MethodPost,
		msg: "Method Not Allowed: the 2026-07-28 protocol only uses POST"}
	refuseMethod = httpRefusal{reason: reasonMethod, status: http.StatusMethodNotAllowed, code: jsonrpc.CodeInvalidRequest, allow: "GET, POST, DELETE",
		msg: "Method Not Allowed"}
	refuseMediaType = httpRefusal{reason: reasonMediaType, status: http.StatusUnsupportedMediaType, code: jsonrpc.CodeInvalidRequest,
		msg: "Unsupported Media Type: Content-Type must be application/json"}
	// refuseTooLarge takes the limit (MaxBodyBytes).
	refuseTooLarge = httpRefusal{reason: reasonBodyTooLarge, status: http.StatusRequestEntityTooLarge, code: jsonrpc.CodeInvalidRequest,
		msg: "Request Entity Too Large: the body exceeds %d bytes"}
	// refuseBadBody: reading the body failed or timed out.
	refuseBadBody = httpRefusal{reason: reasonBodyUnreadable, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, msg: "cannot read the request body"}
	// refuseBadMessage: the decoder's own answer (jsonrpc.DecodeError's
	// Response): its error, with the id it could read (null or the
	// request's).
	refuseBadMessage = httpRefusal{reason: reasonInvalidMessage, status: http.StatusBadRequest, withID: true, given: true}
	// refuseInvalidMessage: a message the decoder refused without an
	// answer of its own.
	refuseInvalidMessage = httpRefusal{reason: reasonInvalidMessage, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, msg: "invalid JSON-RPC message"}
	refuseModernResponse = httpRefusal{reason: reasonInvalidMessage, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest,
		msg: "clients do not send responses in the 2026-07-28 protocol"}
)

// The refusals of legacy sessions (http_legacy.go, http_legacy_stream.go).
// Those found before the request is looked at (the session checks, the
// GET stream's) carry a null id; those of a request being admitted carry
// its id.
var (
	refuseNoSession = httpRefusal{reason: reasonSessionRequired, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest,
		msg: "Bad Request: Mcp-Session-Id header is required (send initialize first, or per-request _meta for protocol 2026-07-28)"}
	// refuseSessionNotFound: unknown, ended, or bound to another principal.
	refuseSessionNotFound = httpRefusal{reason: reasonSessionNotFound, status: http.StatusNotFound, code: jsonrpc.CodeInvalidRequest, msg: "Session not found"}
	refuseRepeatedVersion = httpRefusal{reason: reasonProtocolVersion, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, msg: msgRepeatedVersion}
	// refuseVersion takes the MCP-Protocol-Version header's value.
	refuseVersion = httpRefusal{reason: reasonProtocolVersion, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest,
		msg: "Bad Request: unsupported MCP-Protocol-Version %q"}
	// refuseNotAcceptable: a legacy POST; its id is null, unlike
	// refuseModernNotAcceptable's.
	refuseNotAcceptable = httpRefusal{reason: reasonNotAcceptable, status: http.StatusNotAcceptable, code: jsonrpc.CodeInvalidRequest, msg: msgNotAcceptable}
	// refuseInitRepeatedVersion: an initialize; with its id, unlike
	// refuseRepeatedVersion.
	refuseInitRepeatedVersion = httpRefusal{reason: reasonProtocolVersion, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, withID: true, msg: msgRepeatedVersion}
	refuseNoPrincipal         = httpRefusal{reason: reasonNoPrincipal, status: http.StatusForbidden, code: jsonrpc.CodeInvalidRequest, withID: true,
		msg: "Forbidden: the credentials name no principal a session can be bound to"}
	// refuseTooManySessions: an initialize over MaxSessions; with its id,
	// unlike refuseTooManySessionsAdopting.
	refuseTooManySessions = httpRefusal{reason: reasonMaxSessions, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, withID: true, retryAfter: "5",
		msg: msgTooManySessions}
	// refuseTooManyInFlight: MaxConcurrentRequests of the session.
	refuseTooManyInFlight = httpRefusal{reason: reasonMaxInFlight, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, withID: true, retryAfter: "1",
		msg: "Service Unavailable: too many requests in flight on this session"}
	refuseDuplicateID = httpRefusal{reason: reasonDuplicateID, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, withID: true,
		msg: "duplicate request id: a request with this id is still in flight"}
	refuseGETNotAcceptable = httpRefusal{reason: reasonNotAcceptable, status: http.StatusNotAcceptable, code: jsonrpc.CodeInvalidRequest,
		msg: "Not Acceptable: the GET stream needs Accept: text/event-stream"}
	refuseBadLastEventID  = httpRefusal{reason: reasonLastEventID, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, msg: "Bad Request: malformed Last-Event-ID"}
	refuseNothingToResume = httpRefusal{reason: reasonLastEventID, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest,
		msg: "Bad Request: nothing to resume after this Last-Event-ID: the id is unknown, or its stream has ended and its events are no longer stored"}
)

// The refusals of modern (2026-07-28) requests (http_modern.go) and of the
// scope check (http_auth.go): all carry the request's id.
var (
	// refuseHeaderMismatch takes the error of checkModernHeaders.
	refuseHeaderMismatch      = httpRefusal{reason: reasonHeaderMismatch, status: http.StatusBadRequest, code: jsonrpc.CodeHeaderMismatch, withID: true, msg: "%v"}
	refuseModernNotAcceptable = httpRefusal{reason: reasonNotAcceptable, status: http.StatusNotAcceptable, code: jsonrpc.CodeInvalidRequest, withID: true, msg: msgNotAcceptable}
	// refuseSubscriptionStreams: MaxListenStreams.
	refuseSubscriptionStreams = httpRefusal{reason: reasonMaxListenStreams, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, withID: true, retryAfter: "5",
		msg: "Service Unavailable: too many subscription streams"}
	// refuseInsufficientScope: httpScopeCheck; the body is scopeRefusal's
	// error (with its data), the status setChallenges' (403).
	refuseInsufficientScope = httpRefusal{reason: reasonInsufficientScope, status: http.StatusForbidden, withID: true, given: true}
	// refuseAuthenticate: Authenticate refused the request
	// (writeAuthError). The status is the AuthError's (401 unless it says
	// 400-499) and the message that status's text, the argument;
	// setChallenges sets WWW-Authenticate. Its id is null.
	refuseAuthenticate = httpRefusal{reason: reasonUnauthenticated, status: http.StatusUnauthorized, code: jsonrpc.CodeInvalidRequest, msg: "%s"}
)

// The refusals of sessions shared across replicas (http_sessions_store.go):
// found before the request is looked at, their id is null.
var (
	// refuseReplicaUnreachable: ErrSessionOwned.
	refuseReplicaUnreachable = httpRefusal{reason: reasonReplicaUnreachable, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, retryAfter: "1",
		msg: "Service Unavailable: the session's replica cannot be reached"}
	// refuseSessionStore: AdoptSession failed.
	refuseSessionStore = httpRefusal{reason: reasonSessionStore, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, retryAfter: "1",
		msg: "Service Unavailable: the session store is unavailable"}
	// refuseTooManySessionsAdopting: MaxSessions reached by adopting a
	// session; the id is null, unlike refuseTooManySessions'.
	refuseTooManySessionsAdopting = httpRefusal{reason: reasonMaxSessions, status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, retryAfter: "5",
		msg: msgTooManySessions}
	// refuseSessionNotSaved: SaveSession failed for a session just
	// initialized (saveSession). Not written by write: the initialize
	// fails with this error (errSessionStore) in its own reply, status 200
	// JSON or the last event of its SSE stream, with its id and no
	// Retry-After, unlike refuseSessionStore's 503.
	refuseSessionNotSaved = httpRefusal{reason: reasonSessionStore, status: http.StatusOK, code: jsonrpc.CodeInternalError, withID: true,
		msg: "the session store is unavailable; retry later"}
)

// Messages of several refusals.
const (
	// msgRepeatedVersion: an MCP-Protocol-Version header sent on more than
	// one field line (see headerRepeated).
	msgRepeatedVersion = "Bad Request: MCP-Protocol-Version header sent more than once"
	msgNotAcceptable   = "Not Acceptable: accept application/json or text/event-stream"
	msgTooManySessions = "Service Unavailable: too many sessions"
)

// refusalReason is the name a refusal is counted under: a fixed set
// (refusalReasonNames), so that what a client sends never becomes a
// metric label. Several refusals share a reason when an operator would
// act on them alike.
type refusalReason uint8

const (
	reasonHost               refusalReason = iota // 403: Host not allowed
	reasonOrigin                                  // 403: Origin not allowed
	reasonUnauthenticated                         // 401 (or the AuthError's 4xx): Authenticate refused
	reasonInsufficientScope                       // 403: a scope is missing
	reasonNoPrincipal                             // 403: no principal to bind a session to
	reasonSessionRequired                         // 400: no Mcp-Session-Id
	reasonSessionNotFound                         // 404: unknown or ended session
	reasonHeaderMismatch                          // 400: Mcp-Method/Mcp-Name disagree with the body
	reasonProtocolVersion                         // 400: MCP-Protocol-Version unsupported or repeated
	reasonMethod                                  // 405
	reasonMediaType                               // 415
	reasonNotAcceptable                           // 406
	reasonBodyTooLarge                            // 413: MaxBodyBytes
	reasonBodyUnreadable                          // 400: reading the body failed or timed out
	reasonInvalidMessage                          // 400: not a JSON-RPC message this endpoint takes
	reasonDuplicateID                             // 400: the id is in flight
	reasonLastEventID                             // 400: malformed or unknown Last-Event-ID
	reasonMaxSessions                             // 503: MaxSessions
	reasonMaxInFlight                             // 503: MaxConcurrentRequests of a session
	reasonMaxListenStreams                        // 503: MaxListenStreams
	reasonShuttingDown                            // 503: Shutdown or Close has begun
	reasonReplicaUnreachable                      // 503: the session's replica
	reasonSessionStore                            // 503: the SessionStore failed
	numRefusalReasons
)

// refusalReasonNames are the keys of StreamableHTTPStats.Refusals.
var refusalReasonNames = [numRefusalReasons]string{
	reasonHost: "host", reasonOrigin: "origin", reasonUnauthenticated: "unauthenticated",
	reasonInsufficientScope: "insufficient_scope", reasonNoPrincipal: "no_principal",
	reasonSessionRequired: "session_required", reasonSessionNotFound: "session_not_found",
	reasonHeaderMismatch: "header_mismatch", reasonProtocolVersion: "protocol_version",
	reasonMethod: "method", reasonMediaType: "media_type", reasonNotAcceptable: "not_acceptable",
	reasonBodyTooLarge: "body_too_large", reasonBodyUnreadable: "body_unreadable",
	reasonInvalidMessage: "invalid_message", reasonDuplicateID: "duplicate_id",
	reasonLastEventID: "last_event_id", reasonMaxSessions: "max_sessions", reasonMaxInFlight: "max_in_flight",
	reasonMaxListenStreams: "max_listen_streams", reasonShuttingDown: "shutting_down",
	reasonReplicaUnreachable: "replica_unreachable", reasonSessionStore: "session_store",
}

// refusalCounts counts a handler's refusals by reason (one atomic add per
// refusal; nothing on the paths that serve).
type refusalCounts [numRefusalReasons]atomic.Uint64

// snapshot is the counts by name, every reason present.
func (c *refusalCounts) snapshot() map[string]uint64 {
	m := make(map[string]uint64, numRefusalReasons)
	for i := range c {
		m[refusalReasonNames[i]] = c[i].Load()
	}
	return m
}

// write answers the request with rf, counted in n: its headers, its
// status and, as the body, a JSON-RPC error response whose id is id when
// rf.withID (noID when the request has none), else null. args fill the
// verbs of rf.msg, or are the one *jsonrpc.Error of a given refusal.
func (rf httpRefusal) write(w http.ResponseWriter, n *refusalCounts, id jsonrpc.ID, args ...any) {
	n[rf.reason].Add(1)
	if rf.allow != "" {
		w.Header().Set("Allow", rf.allow)
	}
	if rf.retryAfter != "" {
		w.Header().Set("Retry-After", rf.retryAfter)
	}
	if !rf.withID {
		id = noID
	}
	writeResponse(w, rf.status, &jsonrpc.Response{ID: id, Error: rf.rpcError(args...)})
}

// withStatus is rf answering with status: for the refusals whose status
// the error decides (refuseAuthenticate, refuseInsufficientScope).
func (rf httpRefusal) withStatus(status int) httpRefusal {
	rf.status = status
	return rf
}

// rpcError is the JSON-RPC error of rf with args.
func (rf httpRefusal) rpcError(args ...any) *jsonrpc.Error {
	if rf.given {
		return args[0].(*jsonrpc.Error)
	}
	msg := rf.msg
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	return &jsonrpc.Error{Code: rf.code, Message: msg}
}

// rateLimitedHeaders sets the Retry-After header (whole seconds, rounded
// up) of a plain JSON reply whose error is err, a CodeRateLimited error
// (RateLimitedError's wire form, or an upstream's of that code carrying
// data.retryAfterMs); the reply's status is modernStatus's 429. Nothing is
// set when the data has no usable retryAfterMs.
func rateLimitedHeaders(w http.ResponseWriter, err error) {
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeRateLimited {
		return
	}
	var d rateLimitedData
	if Unmarshal(e.Data, &d) != nil || d.RetryAfterMs <= 0 {
		return
	}
	w.Header().Set("Retry-After", strconv.FormatInt((d.RetryAfterMs+999)/1000, 10))
}

func writeResponse(w http.ResponseWriter, status int, resp *jsonrpc.Response) {
	b, err := jsonrpc.AppendMessage(make([]byte, 0, 128), resp)
	if err != nil {
		b, _ = jsonrpc.AppendMessage(nil, &jsonrpc.Response{ID: resp.ID, Error: jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: cannot encode the response")})
	}
	writeJSONBody(w, status, b)
}
