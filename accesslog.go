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

// AccessLogMessage is the message of every access record.
const AccessLogMessage = "mcp request"

// Attribute keys of an access record.
const (
	AccessKeyMethod          = "method"
	AccessKeyName            = "name"
	AccessKeyEra             = "era"
	AccessKeyProtocolVersion = "protocol_version"
	AccessKeyID              = "id"
	AccessKeySession         = "session"
	AccessKeyTransport       = "transport"
	AccessKeyDuration        = "duration"
	AccessKeyOutcome         = "outcome"
	AccessKeyCode            = "code"
	AccessKeyResponseBytes   = "response_bytes"
	AccessKeyPrincipal       = "principal"
)

// Outcomes of an access record.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error" // a tools/call result with isError
	OutcomeError     = "error"      // a JSON-RPC error; its code is logged
)

// logAccess writes the access record of req, whose response encoded to
// size bytes. It does nothing when the access log was off when req began.
func (s *Server) logAccess(ctx context.Context, req *jsonrpc.Request, rs *reqState, res any, err error, size int) {
	if rs == nil || rs.accessStart.IsZero() {
		return
	}
	d := time.Since(rs.accessStart)
	env := &rs.env
	attrs := make([]slog.Attr, 0, 13)
	attrs = append(attrs, slog.String(AccessKeyMethod, req.Method))
	if name := targetName(req, &rs.params); name != "" {
		attrs = append(attrs, slog.String(AccessKeyName, name))
	}
	era, version := accessEra(req, rs)
	if era != EraUnknown {
		attrs = append(attrs, slog.String(AccessKeyEra, era.String()))
	}
	if version != "" {
		attrs = append(attrs, slog.String(AccessKeyProtocolVersion, version))
	}
	attrs = append(attrs, slog.String(AccessKeyID, req.ID.String()))
	if env.sessionID != "" {
		attrs = append(attrs, slog.String(AccessKeySession, env.sessionID))
	}
	ti, _ := env.transportInfo()
	attrs = append(attrs, slog.String(AccessKeyTransport, ti.Name), slog.Duration(AccessKeyDuration, d))
	switch {
	case ErrorCode(err) != 0:
		attrs = append(attrs, slog.String(AccessKeyOutcome, OutcomeError), slog.Int64(AccessKeyCode, ErrorCode(err)))
	case isToolErrorResult(res):
		attrs = append(attrs, slog.String(AccessKeyOutcome, OutcomeToolError))
	default:
		attrs = append(attrs, slog.String(AccessKeyOutcome, OutcomeOK))
	}
	attrs = append(attrs, slog.Int(AccessKeyResponseBytes, size))
	if p := logSubject(env.authInfo, env.authCtx); p != "" {
		attrs = append(attrs, slog.String(AccessKeyPrincipal, p))
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, AccessLogMessage, attrs...)
}

func isToolErrorResult(res any) bool {
	r, ok := res.(Result)
	return ok && IsToolError(r)
}

// accessEra returns the era and version of a request, from its handler
// context when the dispatcher got that far, else from its _meta or its
// session.
func accessEra(req *jsonrpc.Request, rs *reqState) (Era, string) {
	ss := rs.env.session
	if pc := rs.extra.ProtocolContext; pc != nil {
		if pc.Era == EraLegacy && pc.ProtocolVersion == "" && ss != nil {
			if spc := ss.protocol(); spc != nil {
				return EraLegacy, spc.ProtocolVersion // initialize: the negotiated one
			}
		}
		return pc.Era, pc.ProtocolVersion
	}
	if v := rs.meta.ProtocolVersion; v != nil {
		return EraModern, *v
	}
	if ss == nil || decideEra(req.Method, false, rs.meta.ClientCapabilities != nil) == EraModern {
		return EraModern, ""
	}
	if spc := ss.protocol(); spc != nil {
		return EraLegacy, spc.ProtocolVersion
	}
	return EraLegacy, ""
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
