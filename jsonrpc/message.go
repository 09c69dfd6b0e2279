package jsonrpc

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the only JSON-RPC version this package speaks.
const Version = "2.0"

// Message is a decoded JSON-RPC message: a *Request (which is a
// notification when its ID is not valid) or a *Response. The set is closed.
type Message interface {
	isMessage()
}

// Request is a JSON-RPC request or, when ID.IsValid() is false, a
// notification. Params holds the raw params member, or nil when absent.
type Request struct {
	ID     ID
	Method string
	Params jsontext.Value
}

// IsNotification reports whether the request carries no id.
func (r *Request) IsNotification() bool { return !r.ID.IsValid() }

func (*Request) isMessage() {}

// Response is a JSON-RPC response. Exactly one of Result and Error is set.
// An error response whose request id could not be read has an invalid ID,
// which is written as null.
type Response struct {
	ID     ID
	Result jsontext.Value
	Error  *Error
}

func (*Response) isMessage() {}

// ID is a JSON-RPC request id: a string or an integer, never null. The zero
// ID is "no id" (notifications, or an unreadable id on an error response).
type ID struct {
	str  string
	num  int64
	kind idKind
}

type idKind uint8

const (
	idNone idKind = iota
	idInt
	idString
)

// Int64ID returns an integer id.
func Int64ID(n int64) ID { return ID{num: n, kind: idInt} }

// StringID returns a string id.
func StringID(s string) ID { return ID{str: s, kind: idString} }

// IsValid reports whether the id is set.
func (id ID) IsValid() bool { return id.kind != idNone }

// IsString reports whether the id is a string id.
func (id ID) IsString() bool { return id.kind == idString }

// Int64 returns the integer value and true for an integer id.
func (id ID) Int64() (int64, bool) { return id.num, id.kind == idInt }

// Str returns the string value and true for a string id.
func (id ID) Str() (string, bool) { return id.str, id.kind == idString }

// String renders the id for logs: integers in decimal, strings quoted,
// and "null" for no id.
func (id ID) String() string {
	switch id.kind {
	case idInt:
		return strconv.FormatInt(id.num, 10)
	case idString:
		return strconv.Quote(id.str)
	}
	return "null"
}

// AppendJSON appends the JSON encoding of the id (null when not valid).
func (id ID) AppendJSON(b []byte) []byte {
	switch id.kind {
	case idInt:
		return strconv.AppendInt(b, id.num, 10)
	case idString:
		v, _ := jsontext.AppendQuote(b, id.str)
		return v
	}
	return append(b, "null"...)
}

// MarshalJSON encodes the id as its JSON value (a number, a string or
// null) for encoding/json; json v2 uses MarshalJSONTo.
func (id ID) MarshalJSON() ([]byte, error) { return id.AppendJSON(nil), nil }

// MarshalJSONTo implements json v2 marshaling.
func (id ID) MarshalJSONTo(enc *jsontext.Encoder) error {
	switch id.kind {
	case idInt:
		return enc.WriteToken(jsontext.Int(id.num))
	case idString:
		return enc.WriteToken(jsontext.String(id.str))
	}
	return enc.WriteToken(jsontext.Null)
}

// UnmarshalJSONFrom implements json v2 unmarshaling. It accepts strings and
// integers; null, fractions, exponents and other kinds are rejected.
func (id *ID) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		*id = StringID(tok.String())
		return nil
	case '0':
		n, perr := strconv.ParseInt(tok.String(), 10, 64)
		if perr != nil {
			return fmt.Errorf("jsonrpc: id %s is not an integer", tok.String())
		}
		*id = Int64ID(n)
		return nil
	case 'n':
		return errors.New("jsonrpc: id must not be null")
	}
	return fmt.Errorf("jsonrpc: id must be a string or an integer, not %v", tok.Kind())
}

// Error is a JSON-RPC error object. It implements error, so handlers can
// return one to choose the code a peer sees; errors.As finds it in chains.
type Error struct {
	Code    int64
	Message string
	Data    jsontext.Value
}

func (e *Error) Error() string {
	return "jsonrpc error " + strconv.FormatInt(e.Code, 10) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &jsonrpc.Error{Code: CodeMethodNotFound}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// NewError returns an *Error with the given code and message.
func NewError(code int64, msg string) *Error { return &Error{Code: code, Message: msg} }

// Standard JSON-RPC codes and the codes MCP defines.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeResourceNotFound is the 2025-11-25 resource-not-found code. The
	// 2026-07-28 revision uses CodeInvalidParams instead.
	CodeResourceNotFound = -32002
	// CodeURLElicitationRequired is the 2025-11-25 URL elicitation error.
	CodeURLElicitationRequired = -32042
	// CodeHeaderMismatch: an HTTP header disagrees with the body (2026-07-28).
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability (2026-07-28).
	CodeMissingRequiredClientCapability = -32021
	// CodeUnsupportedProtocolVersion (2026-07-28).
	CodeUnsupportedProtocolVersion = -32022
	// CodeRateLimited: the caller's rate limit is spent; the error's data
	// carries retryAfterMs. An implementation-defined server error (MCP
	// defines none), -32029 after HTTP's 429.
	CodeRateLimited = -32029
)
