package jsonrpc

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/jsonskip"
)

// Default limits applied by Decode when the corresponding Limits field is
// zero.
const (
	// DefaultMaxMessageBytes is the largest encoded message Decode accepts
	// by default: 4 MiB.
	DefaultMaxMessageBytes = 4 << 20
	// DefaultMaxDepth is the deepest JSON nesting Decode accepts by default.
	// Depth counts every object and array, including the top-level message
	// object itself: {"params":{"a":[1]}} has depth 3.
	DefaultMaxDepth = 256
)

// Limits bounds the resources Decode spends on one message. A zero field
// means the default (DefaultMaxMessageBytes, DefaultMaxDepth); a negative
// field disables that limit. Even with MaxDepth disabled, the underlying
// JSON parser refuses nesting deeper than 10000.
type Limits struct {
	// MaxMessageBytes caps len(data) passed to Decode, whitespace included.
	MaxMessageBytes int
	// MaxDepth caps JSON nesting depth, counting every object and array.
	MaxDepth int
}

func (l Limits) maxMessageBytes() int {
	if l.MaxMessageBytes == 0 {
		return DefaultMaxMessageBytes
	}
	return l.MaxMessageBytes
}

func (l Limits) maxDepth() int {
	if l.MaxDepth == 0 {
		return DefaultMaxDepth
	}
	return l.MaxDepth
}

// Sentinel errors carried by a *DecodeError; test for them with errors.Is.
var (
	// ErrMessageTooLarge: the message exceeds Limits.MaxMessageBytes (or a
	// transport's line limit). Code is CodeParseError.
	ErrMessageTooLarge = errors.New("jsonrpc: message too large")
	// ErrTooDeep: the message nests deeper than Limits.MaxDepth. Code is
	// CodeParseError.
	ErrTooDeep = errors.New("jsonrpc: message nested too deeply")
	// ErrBatch: the message is a JSON array. Batches were removed from MCP,
	// so they are refused as a whole. Code is CodeInvalidRequest.
	ErrBatch = errors.New("jsonrpc: batch messages are not supported")
	// ErrDuplicateName: an object (at any level) repeats a member name.
	// It is jsontext.ErrDuplicateName itself, so errors.Is matches either.
	// Code is CodeInvalidRequest: the JSON is well-formed but ambiguous.
	ErrDuplicateName = jsontext.ErrDuplicateName
)

// DecodeError reports a message that could not be decoded. Code is
//
//   - CodeParseError when the bytes cannot be trusted at all: invalid JSON,
//     trailing data, nesting beyond Limits.MaxDepth, or a message larger
//     than Limits.MaxMessageBytes. ID is then the zero ID, except for
//     nesting beyond Limits.MaxDepth (ErrTooDeep): there ID echoes the
//     message's top-level id when it occurs once and can be read (in the
//     whole message, or else before the point where the limit is hit), so
//     the caller's request is answered instead of left waiting;
//   - CodeInvalidRequest when the JSON is well-formed but is not a valid
//     JSON-RPC 2.0 message: a batch, a missing or wrong "jsonrpc", a bad id
//     or method type, a member name that differs from a known one only by
//     case, duplicate member names, and so on. ID echoes the message's id
//     when it could be read unambiguously.
//
// A message that would have been a notification (no id) but is invalid is
// still reported as a *DecodeError with the zero ID: JSON-RPC 2.0 answers
// invalid messages with an error response whose id is null, and whether to
// send it is the caller's decision. An invalid message that looked like a
// response is reported too, but its Response method returns nil.
type DecodeError struct {
	// Code is CodeParseError or CodeInvalidRequest.
	Code int64
	// ID is the id of the offending message, when it could be read.
	ID ID
	// Msg is a human-readable description, used as the error response
	// message.
	Msg string
	// Err is the underlying cause, if any: one of the sentinels above or a
	// *jsontext.SyntacticError.
	Err error

	// response is set by Decode when the invalid message was recognizably
	// a response (it had "result" or "error" and no "method"); such a
	// message must never be answered.
	response bool
}

// Error implements error.
func (e *DecodeError) Error() string { return "jsonrpc: " + e.Msg }

// Unwrap returns the underlying cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &Error{Code: CodeParseError}) matches.
func (e *DecodeError) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Response returns the error response to send back for this message, with
// the id echoed when it was known (null otherwise). It returns nil when the
// invalid message was itself a response (it had a "result" or "error"
// member and no "method"): answering responses is never allowed, and doing
// so could make two peers bounce error responses back and forth.
func (e *DecodeError) Response() *Response {
	if e.response {
		return nil
	}
	return &Response{ID: e.ID, Error: &Error{Code: e.Code, Message: e.Msg}}
}

func parseError(msg string, err error) *DecodeError {
	return &DecodeError{Code: CodeParseError, Msg: msg, Err: err}
}

// Decode decodes exactly one JSON-RPC 2.0 message from data. Whitespace
// around the message is allowed; anything else after it is an error. All
// failures are reported as a *DecodeError.
//
// The returned message does not copy data: the raw Params, Result and
// Error.Data values are sub-slices of data (capacity-clipped, so appending
// to them never writes into data). The caller must not modify data while
// the message, or anything retaining its raw values, is in use.
func Decode(data []byte, lim Limits) (Message, error) {
	if max := lim.maxMessageBytes(); max >= 0 && len(data) > max {
		return nil, TooLarge(data[:min(len(data), TooLargePrefix)], "message of "+strconv.Itoa(len(data))+
			" bytes exceeds the limit of "+strconv.Itoa(max)+" bytes")
	}
	if max := lim.maxDepth(); max >= 0 {
		if at := depthExceeded(data, max); at >= 0 {
			return nil, tooDeep(data, at, max)
		}
	}
	p := parserPool.Get().(*parser)
	p.reset(data)
	m, err := p.parse()
	p.release()
	parserPool.Put(p)
	return m, err
}

// TooLargePrefix is how many bytes of a message over a size limit
// TooLarge needs: enough for the members that precede a large one.
const TooLargePrefix = 4 << 10

// TooLarge returns the error for a message over a size limit, of which
// only prefix (its first bytes, up to TooLargePrefix are looked at) was
// kept: a transport skips the rest unread. msg says which limit; Err is
// ErrMessageTooLarge. As for a message nested too deep, the top-level id
// is looked for in prefix, so that the error reaches the caller of the
// request, or the call the response answered, instead of leaving it
// waiting; a message that looks like a response is marked so that it is
// never answered.
func TooLarge(prefix []byte, msg string) *DecodeError {
	e := parseError(msg, ErrMessageTooLarge)
	r := scanPrefix(prefix[:min(len(prefix), TooLargePrefix)])
	e.ID, e.response = r.id, r.response
	return e
}

// depthWithin reports whether the nesting depth of data is at most max.
func depthWithin(data []byte, max int) bool { return depthExceeded(data, max) < 0 }

// depthExceeded returns the offset of the bracket that takes data deeper
// than max, or -1 when it stays within. It is a cheap pre-scan that only
// tracks string state; it does not validate the JSON, which the parser
// does afterwards.
//
// Nesting can never be deeper than the number of opening brackets, those
// inside strings included: when that count (vectorized byte counts, a
// few instructions per 32 bytes) is within max, so is the depth, and the
// byte-by-byte scan is skipped. MCP requests have a few dozen brackets at
// most, against a default limit of 256.
func depthExceeded(data []byte, max int) int {
	if n := bytes.Count(data, openBrace); n <= max && n+bytes.Count(data, openBracket) <= max {
		return -1
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = jsonskip.String(data, i+1)
		case '{', '[':
			depth++
			if depth > max {
				return i
			}
		case '}', ']':
			depth--
		}
	}
	return -1
}

// tooDeep builds the error for a message nested deeper than max (first
// exceeded at offset at). The message is not parsed, but its top-level id
// is looked for so that the error response reaches the request's caller
// instead of leaving it waiting: in the whole message when the JSON parser
// can read it (duplicates and late members are then seen), otherwise in
// the part before offset at. Either way the id counts only when it occurs
// exactly once, and a message that looks like a response is marked so
// that it is never answered.
func tooDeep(data []byte, at, max int) *DecodeError {
	e := parseError("message nesting exceeds the maximum depth of "+strconv.Itoa(max), ErrTooDeep)
	r, err := rescan(data)
	if err != nil {
		r = scanPrefix(data[:at])
	}
	e.ID, e.response = r.id, r.response
	return e
}

var openBrace, openBracket = []byte{'{'}, []byte{'['}
