package otel

import (
	"context"
	"errors"
	"strconv"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// callerFault reports whether a JSON-RPC error code blames the caller. On
// the server such an error is recorded (rpc.response.status_code) but is
// not a failure of the server: no error.type, no ERROR status. The MCP
// conventions list parse error, invalid request, method not found,
// invalid params (also an unknown tool) and resource not found; the
// 2026-07-28 header-mismatch, missing-capability and unsupported-version
// codes are the caller's fault in the same way.
func callerFault(code int64) bool {
	switch code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound,
		jsonrpc.CodeInvalidParams, jsonrpc.CodeResourceNotFound,
		jsonrpc.CodeHeaderMismatch, jsonrpc.CodeMissingRequiredClientCapability,
		jsonrpc.CodeUnsupportedProtocolVersion:
		return true
	}
	return false
}

// outcome is how an operation ended, as spans and metrics record it.
type outcome struct {
	errorType  string // "" on success
	statusCode string // "" without a JSON-RPC error
	message    string // span status description
}

// attrs appends the outcome's attributes.
func (o outcome) attrs(a []attribute.KeyValue) []attribute.KeyValue {
	if o.errorType != "" {
		a = append(a, KeyErrorType.String(o.errorType))
	}
	if o.statusCode != "" {
		a = append(a, KeyResponseStatusCode.String(o.statusCode))
	}
	return a
}

// end records the outcome on span and ends it.
func (o outcome) end(span trace.Span, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(o.attrs(nil)...)
	if o.errorType != "" {
		span.SetStatus(codes.Error, o.message)
		if err != nil && rpcError(err) == nil {
			span.RecordError(err)
		}
	}
	span.End()
}

// rpcError returns the JSON-RPC error in err's chain, nil if none: on the
// client the peer's error; on the server only its message is read, the
// code being pmcp.ErrorCode's (the server's one mapping of errors).
func rpcError(err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// serverOutcome classifies what a server handler returned (§ error
// classification of the MCP conventions, server side).
func serverOutcome(res pmcp.Result, err error) outcome {
	if err == nil {
		if r, ok := res.(*pmcp.CallToolResult); ok && r != nil && r.IsError {
			return outcome{errorType: ErrorTypeToolError, message: ErrorTypeToolError}
		}
		return outcome{}
	}
	if errors.Is(err, pmcp.ErrInputRequired) {
		// A modern-era input_required result: the call goes on in
		// another round, nothing failed.
		return outcome{}
	}
	code := pmcp.ErrorCode(err)
	if code == 0 {
		// A subscriptions/listen stream the client closed: no response
		// is sent and nothing failed.
		return outcome{}
	}
	o := outcome{statusCode: strconv.FormatInt(code, 10)}
	if !callerFault(code) {
		o.errorType = o.statusCode
		o.message = err.Error()
		if e := rpcError(err); e != nil {
			o.message = e.Message
		}
	}
	return o
}

// clientOutcome classifies the result of an outgoing call. On the client
// every JSON-RPC error is a failure.
func clientOutcome(isToolError bool, err error) outcome {
	if err == nil {
		if isToolError {
			return outcome{errorType: ErrorTypeToolError, message: ErrorTypeToolError}
		}
		return outcome{}
	}
	if e := rpcError(err); e != nil {
		c := strconv.FormatInt(e.Code, 10)
		return outcome{errorType: c, statusCode: c, message: e.Message}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return outcome{errorType: ErrorTypeTimeout, message: err.Error()}
	}
	return outcome{errorType: ErrorTypeOther, message: err.Error()}
}
