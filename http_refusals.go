package pmcp

import (
	"fmt"
	"net/http"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// httpRefusal is one way the Streamable HTTP transport refuses a request: the
// HTTP status, and the JSON-RPC error response that is the body. Every
// refusal is a named value below, written by write, the one writer; the
// status never appears at a call site. TestHTTPRefusals records the bytes
// each one writes.
type httpRefusal struct {
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
	refuseHostForbidden = httpRefusal{status: http.StatusForbidden, code: jsonrpc.CodeInvalidRequest,
		msg: "Forbidden: Host not allowed (by default only localhost, 127.0.0.0/8 and [::1], with an optional port, are accepted; " +
			"list other names in StreamableHTTPOptions.AllowedHosts)"}
	refuseOriginForbidden = httpRefusal{status: http.StatusForbidden, code: jsonrpc.CodeInvalidRequest, msg: "Forbidden: Origin not allowed"}
	// refuseShuttingDown: Shutdown or Close has begun (no Retry-After: the
	// client goes to another server).
	refuseShuttingDown   = httpRefusal{status: http.StatusServiceUnavailable, code: jsonrpc.CodeInternalError, msg: "server is shutting down"}
	refuseModernOnlyPOST = httpRefusal{status: http.StatusMethodNotAllowed, code: jsonrpc.CodeInvalidRequest, allow: http.MethodPost,
		msg: "Method Not Allowed: the 2026-07-28 protocol only uses POST"}
	refuseMethod = httpRefusal{status: http.StatusMethodNotAllowed, code: jsonrpc.CodeInvalidRequest, allow: "GET, POST, DELETE",
		msg: "Method Not Allowed"}
	refuseMediaType = httpRefusal{status: http.StatusUnsupportedMediaType, code: jsonrpc.CodeInvalidRequest,
		msg: "Unsupported Media Type: Content-Type must be application/json"}
	// refuseTooLarge takes the limit (MaxBodyBytes).
	refuseTooLarge = httpRefusal{status: http.StatusRequestEntityTooLarge, code: jsonrpc.CodeInvalidRequest,
		msg: "Request Entity Too Large: the body exceeds %d bytes"}
	// refuseBadBody: reading the body failed or timed out.
	refuseBadBody = httpRefusal{status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, msg: "cannot read the request body"}
	// refuseBadMessage: the decoder's own answer (jsonrpc.DecodeError's
	// Response): its error, with the id it could read (null or the
	// request's).
	refuseBadMessage = httpRefusal{status: http.StatusBadRequest, withID: true, given: true}
	// refuseInvalidMessage: a message the decoder refused without an
	// answer of its own.
	refuseInvalidMessage = httpRefusal{status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, msg: "invalid JSON-RPC message"}
	refuseModernResponse = httpRefusal{status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest,
		msg: "clients do not send responses in the 2026-07-28 protocol"}
)

// write answers the request with rf: its headers, its status and, as the
// body, a JSON-RPC error response whose id is id when rf.withID (noID
// when the request has none), else null. args fill the verbs of rf.msg,
// or are the one *jsonrpc.Error of a given refusal.
func (rf httpRefusal) write(w http.ResponseWriter, id jsonrpc.ID, args ...any) {
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
