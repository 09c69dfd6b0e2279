package pmcp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// The access log: one Info record per request that reaches the dispatcher,
// written to ServerOptions.Logger after the response was encoded. It is on
// when a Logger is set (and enabled at Info) unless
// ServerOptions.DisableAccessLog; a request costs nothing more when it is
// off. A record never holds arguments, results, tokens, error messages or
// Metadata values.

// The record's message, keys and outcome values are data, documented once,
// as a table, on ServerOptions.DisableAccessLog (and in the README).

// accessLogMessage is the message of every access record.
const accessLogMessage = "mcp request"

// Attribute keys of an access record.
const (
	accessKeyMethod          = "method"
	accessKeyName            = "name"
	accessKeyEra             = "era"
	accessKeyProtocolVersion = "protocol_version"
	accessKeyID              = "id"
	accessKeySession         = "session"
	accessKeyTransport       = "transport"
	accessKeyDuration        = "duration"
	accessKeyOutcome         = "outcome"
	accessKeyCode            = "code"
	accessKeyResponseBytes   = "response_bytes"
	accessKeyPrincipal       = "principal"
)

// Outcomes of an access record.
const (
	outcomeOK        = "ok"
	outcomeToolError = "tool_error" // a tools/call result with isError
	outcomeError     = "error"      // a JSON-RPC error; its code is logged
)

// accessAttrsMax is the number of attributes an access record can have.
const accessAttrsMax = 12

// logAccess writes the access record of req, whose response encoded to
// size bytes. It does nothing when the access log was off when req began.
//
// The record is built here rather than through Logger.LogAttrs: its
// attributes are typed values (strings, integers, a duration) taken from
// what the pipeline already computed, in a fixed-size array, and its PC
// is zero, so no stack is walked for a source location (which would
// always name this function). The handler sees the same message, level,
// time and attributes, in the same order.
func (s *Server) logAccess(ctx context.Context, req *jsonrpc.Request, rs *reqState, res any, err error, size int) {
	if rs == nil || rs.accessStart.IsZero() {
		return
	}
	h := s.logger.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return // the level was raised while the request ran
	}
	now := time.Now()
	env := &rs.env
	var a [accessAttrsMax]slog.Attr
	n := 0
	a[n] = slog.String(accessKeyMethod, req.Method)
	n++
	row := rs.row
	if row == nil || row.method != req.Method {
		row = methodOf(req.Method)
	}
	if name := rowTargetName(row, req, &rs.params); name != "" {
		a[n] = slog.String(accessKeyName, name)
		n++
	}
	era, version := accessEra(req, rs)
	if era != EraUnknown {
		a[n] = slog.String(accessKeyEra, era.String())
		n++
	}
	if version != "" {
		a[n] = slog.String(accessKeyProtocolVersion, version)
		n++
	}
	a[n] = slog.String(accessKeyID, req.ID.String())
	n++
	if env.sessionID != "" {
		a[n] = slog.String(accessKeySession, env.sessionID)
		n++
	}
	a[n] = slog.String(accessKeyTransport, env.transportName())
	a[n+1] = slog.Duration(accessKeyDuration, now.Sub(rs.accessStart))
	n += 2
	switch code := ErrorCode(err); {
	case code != 0:
		a[n] = slog.String(accessKeyOutcome, outcomeError)
		a[n+1] = slog.Int64(accessKeyCode, code)
		n += 2
	case isToolErrorResult(res):
		a[n] = slog.String(accessKeyOutcome, outcomeToolError)
		n++
	default:
		a[n] = slog.String(accessKeyOutcome, outcomeOK)
		n++
	}
	a[n] = slog.Int(accessKeyResponseBytes, size)
	n++
	if p := logSubject(env.authInfo, env.authCtx); p != "" {
		a[n] = slog.String(accessKeyPrincipal, p)
		n++
	}
	r := slog.NewRecord(now, slog.LevelInfo, accessLogMessage, 0)
	r.AddAttrs(a[:n]...)
	_ = h.Handle(ctx, r) // as Logger.LogAttrs: a handler's error is not reported
}

func isToolErrorResult(res any) bool {
	r, ok := res.(Result)
	return ok && isToolError(r)
}

// accessEra returns the era and version of a request. The era is the one
// decided for it (reqState.era); a stream request that failed before the
// dispatcher decided (an unknown method, params or _meta that do not
// decode) is logged with the era of what the dispatcher had decoded by
// then (see classify). The version is the request's protocol context's;
// without one (the request failed before it was built), the modern
// _meta's, or the negotiated version of the legacy session.
func accessEra(req *jsonrpc.Request, rs *reqState) (Era, string) {
	era := rs.era
	if era == EraUnknown {
		era = classify(eraInput{method: req.Method, metaVersion: rs.meta.ProtocolVersion != nil, metaCaps: rs.meta.ClientCapabilities != nil})
	}
	if pc := rs.extra.ProtocolContext; pc != nil && pc.ProtocolVersion != "" {
		return era, pc.ProtocolVersion
	}
	switch ss := rs.env.session; {
	case era == EraModern && rs.meta.ProtocolVersion != nil:
		return era, *rs.meta.ProtocolVersion
	case era == EraLegacy && ss != nil:
		if spc := ss.protocol(); spc != nil {
			return era, spc.ProtocolVersion // initialize: the one it negotiated
		}
	}
	return era, ""
}

// streamAccess is the access-log step of Serve: it encodes the outcome
// once to measure it, logs, and returns what the connection sends (the
// encoded result, so the result is not marshaled twice).
func (s *Server) streamAccess(ctx context.Context, req *jsonrpc.Request, rs *reqState, res any, err error) (any, error) {
	if rs.accessStart.IsZero() {
		return res, err
	}
	if err == errListenEnded {
		s.logAccess(ctx, req, rs, res, err, 0)
		return res, err
	}
	// Mapped as the connection would (rpcconn.Resolve); a result that
	// cannot be marshaled is sent as that error, not marshaled again.
	o := rpcconn.Resolve(res, err, marshalResult)
	switch {
	case o.Panic != nil:
		s.logger.Error("pmcp: marshaling a result panicked", "id", req.ID.String(), "panic", fmt.Sprint(o.Panic), "stack", string(o.Stack))
	case o.MarshalErr != nil:
		s.logger.Error("pmcp: cannot marshal result", "id", req.ID.String(), "error", o.MarshalErr)
	}
	out, outErr := res, err
	if err == nil {
		if o.Error != nil {
			out, outErr = nil, o.Error
		} else {
			out = o.Result
		}
	}
	resp := &jsonrpc.Response{ID: req.ID, Result: o.Result, Error: o.Error}
	bp := getBuf()
	b, _ := jsonrpc.AppendMessage((*bp)[:0], resp)
	n := len(b)
	putBuf(bp, b)
	s.logAccess(ctx, req, rs, res, outErr, n)
	return out, outErr
}

// logSubject is who the access log names: the subject, else the client id;
// never anything derived from the token.
func logSubject(info *AuthInfo, actx *AuthContext) string {
	switch {
	case actx != nil && actx.Subject != "":
		return actx.Subject
	case info != nil && info.ClientID != "":
		return info.ClientID
	case actx != nil:
		return actx.ClientID
	}
	return ""
}
