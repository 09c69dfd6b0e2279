package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// AppendMessage appends the compact JSON encoding of m to dst, without a
// trailing newline, and returns the extended buffer.
//
// Envelope members are written in a fixed order: "jsonrpc", "id", then
// "method" and "params" for a request, or "result" / "error" for a
// response. Raw Params, Result and Error.Data values are trusted to be
// valid JSON and copied as given, except that a value containing a line
// break (pretty-printed JSON) is compacted so the output is always a
// single line. A zero-length raw value counts as absent: Params and
// Error.Data are then omitted, and a response with neither Result nor
// Error is written with "result":{}.
//
// It fails for a nil or unknown message, a request whose Params is not an
// object or array, a response with both Result and Error, a success
// response without an id, and strings that are not valid UTF-8. On error,
// dst is returned truncated to its original length.
func AppendMessage(dst []byte, m Message) ([]byte, error) {
	start := len(dst)
	var err error
	switch m := m.(type) {
	case *Request:
		if m == nil {
			return dst, errNilMessage
		}
		dst, err = appendRequest(dst, m)
	case *Response:
		if m == nil {
			return dst, errNilMessage
		}
		dst, err = appendResponse(dst, m)
	default:
		return dst, fmt.Errorf("jsonrpc: cannot encode message of type %T", m)
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// Encode returns the compact JSON encoding of m; see AppendMessage.
func Encode(m Message) ([]byte, error) {
	size := 64
	switch m := m.(type) {
	case *Request:
		if m != nil {
			size += len(m.Method) + len(m.Params)
		}
	case *Response:
		if m != nil {
			size += len(m.Result)
			if m.Error != nil {
				size += len(m.Error.Message) + len(m.Error.Data)
			}
		}
	}
	return AppendMessage(make([]byte, 0, size), m)
}

var errNilMessage = errors.New("jsonrpc: cannot encode a nil message")

func appendRequest(dst []byte, m *Request) ([]byte, error) {
	var err error
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	if m.ID.IsValid() {
		dst = append(dst, `,"id":`...)
		if dst, err = appendID(dst, m.ID); err != nil {
			return dst, err
		}
	}
	dst = append(dst, `,"method":`...)
	if dst, err = jsontext.AppendQuote(dst, m.Method); err != nil {
		return dst, fmt.Errorf("jsonrpc: method: %w", err)
	}
	if len(m.Params) > 0 {
		if k := firstByte(m.Params); k != '{' && k != '[' {
			return dst, errors.New("jsonrpc: params must be a JSON object or array")
		}
		dst = append(dst, `,"params":`...)
		if dst, err = appendRaw(dst, m.Params); err != nil {
			return dst, fmt.Errorf("jsonrpc: params: %w", err)
		}
	}
	return append(dst, '}'), nil
}

func appendResponse(dst []byte, m *Response) ([]byte, error) {
	var err error
	if m.Error != nil && len(m.Result) > 0 {
		return dst, errors.New("jsonrpc: response has both a result and an error")
	}
	if m.Error == nil && !m.ID.IsValid() {
		return dst, errors.New("jsonrpc: success response has no id")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	if dst, err = appendID(dst, m.ID); err != nil {
		return dst, err
	}
	if e := m.Error; e != nil {
		dst = append(dst, `,"error":{"code":`...)
		dst = strconv.AppendInt(dst, e.Code, 10)
		dst = append(dst, `,"message":`...)
		if dst, err = jsontext.AppendQuote(dst, e.Message); err != nil {
			return dst, fmt.Errorf("jsonrpc: error message: %w", err)
		}
		if len(e.Data) > 0 {
			dst = append(dst, `,"data":`...)
			if dst, err = appendRaw(dst, e.Data); err != nil {
				return dst, fmt.Errorf("jsonrpc: error data: %w", err)
			}
		}
		return append(dst, "}}"...), nil
	}
	dst = append(dst, `,"result":`...)
	if len(m.Result) == 0 {
		dst = append(dst, "{}"...)
	} else if dst, err = appendRaw(dst, m.Result); err != nil {
		return dst, fmt.Errorf("jsonrpc: result: %w", err)
	}
	return append(dst, '}'), nil
}

func appendID(dst []byte, id ID) ([]byte, error) {
	if s, ok := id.Str(); ok {
		d, err := jsontext.AppendQuote(dst, s)
		if err != nil {
			return d, fmt.Errorf("jsonrpc: id: %w", err)
		}
		return d, nil
	}
	return id.AppendJSON(dst), nil
}

// compactOpts compact a raw value without otherwise judging it.
var compactOpts = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsontext.PreserveRawStrings(true),
}

// appendRaw appends a trusted raw JSON value, compacting it only when it
// contains a line break, which would break newline-delimited framing.
func appendRaw(dst []byte, v jsontext.Value) ([]byte, error) {
	if bytes.IndexByte(v, '\n') < 0 && bytes.IndexByte(v, '\r') < 0 {
		return append(dst, v...), nil
	}
	start := len(dst)
	d, err := jsontext.AppendFormat(dst, v, compactOpts...)
	if err != nil {
		return d[:start], err
	}
	return d, nil
}

// firstByte returns the first non-whitespace byte of v, or 0.
func firstByte(v []byte) byte {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}
