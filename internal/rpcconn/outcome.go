package rpcconn

import (
	stdjson "encoding/json"
	"errors"
	"runtime/debug"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Outcome is a handler's outcome mapped to the members of its JSON-RPC
// response: exactly one of Result and Error is set. Every transport builds
// its responses from an Outcome, so that an error maps to the same error
// object over a stream and over HTTP.
type Outcome struct {
	// Result is the marshaled result.
	Result jsontext.Value
	// Error is the error object to send.
	Error *jsonrpc.Error
	// MarshalErr, when not nil, is why the result could not be marshaled
	// (Error then says so without the details); Panic and Stack are set
	// when marshaling panicked. They are for the transport's log only.
	MarshalErr error
	Panic      any
	Stack      []byte
}

// Resolve maps a handler's outcome to an [Outcome]:
//
//   - err != nil: if errors.As finds a non-nil *jsonrpc.Error in it, that
//     object is sent as is; any other error becomes -32603 with
//     err.Error() as the message.
//   - a nil result is JSON null; a jsontext.Value or encoding/json
//     RawMessage is sent as it is after a validity check (empty means
//     null); any other value is marshaled once with marshal.
//   - a marshaling failure, or a panic (in marshal, a MarshalJSON method
//     or the error's Error method), becomes -32603 "internal error: cannot
//     marshal result"; the cause is in MarshalErr, Panic and Stack.
//
// marshal is not retained.
func Resolve(res any, err error, marshal func(any) (jsontext.Value, error)) (out Outcome) {
	defer func() {
		if v := recover(); v != nil {
			out = Outcome{Error: marshalFailed(), Panic: v, Stack: debug.Stack()}
		}
	}()
	if err != nil {
		out.Error = ErrorOf(err)
		return out
	}
	raw, merr := marshalValue(res, marshal)
	if merr != nil {
		return Outcome{Error: marshalFailed(), MarshalErr: merr}
	}
	out.Result = raw
	return out
}

// ErrorOf maps a handler's error to the error object sent for it: the
// *jsonrpc.Error in its chain, or -32603 with its text.
func ErrorOf(err error) *jsonrpc.Error {
	if e := AsError(err); e != nil {
		return e
	}
	return jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
}

// AsError returns the non-nil *jsonrpc.Error in err's chain, or nil.
func AsError(err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	return nil
}

// PanicError is the error object sent for a handler that panicked; the
// panic value and stack go to the log only.
func PanicError() *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: handler panicked")
}

func marshalFailed() *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: cannot marshal result")
}

var errInvalidRaw = errors.New("jsonrpc: raw JSON value is not valid")

// Encoded is JSON its producer encoded itself and vouches for: valid by
// construction. Given as params or a result it is sent as it is, without
// the check raw JSON of unknown origin gets (see [Conn.Call]).
type Encoded []byte

// marshalValue turns v into JSON, passing raw JSON through after checking
// it.
func marshalValue(v any, marshal func(any) (jsontext.Value, error)) (jsontext.Value, error) {
	var raw jsontext.Value
	switch v := v.(type) {
	case nil:
		return jsontext.Value("null"), nil
	case Encoded:
		if len(v) == 0 {
			return jsontext.Value("null"), nil
		}
		return jsontext.Value(v), nil
	case jsontext.Value:
		raw = v
	case stdjson.RawMessage:
		raw = jsontext.Value(v)
	default:
		return marshal(v)
	}
	if len(raw) == 0 {
		return jsontext.Value("null"), nil
	}
	if !raw.IsValid() {
		return nil, errInvalidRaw
	}
	return raw, nil
}
