package otel

import (
	"bytes"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"go.opentelemetry.io/otel/propagation"
)

// MetaCarrier is a propagation.TextMapCarrier over the string members of a
// request's params._meta: the MCP conventions (and SEP-414 in the modern
// era) carry W3C traceparent, tracestate and baggage there, unprefixed.
//
// Extract fills a MetaCarrier with MetaCarrierFromMeta; after Inject, a
// client writes each member into the outgoing _meta.
type MetaCarrier map[string]string

var _ propagation.TextMapCarrier = MetaCarrier(nil)

// Get returns the value of key, "" when absent.
func (c MetaCarrier) Get(key string) string { return c[key] }

// Set sets key to value.
func (c MetaCarrier) Set(key, value string) { c[key] = value }

// Keys returns the keys in sorted order.
func (c MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MetaCarrierFromMeta reads the members named in fields (the propagator's
// Fields, for example traceparent, tracestate and baggage) out of a raw
// _meta object. Only string values of at most pmcp.MaxTraceValueLen bytes
// are kept: _meta is peer-controlled, and a propagator then validates the
// format itself. A malformed or absent _meta gives an empty carrier, or
// the members read before the point where it is malformed.
//
// It reads the object's top level in one pass without a JSON decoder
// (this runs for every request that carries trace context): other
// members' values are skipped, not validated.
func MetaCarrierFromMeta(meta jsontext.Value, fields []string) MetaCarrier {
	c := MetaCarrier{}
	if len(meta) == 0 || !mentionsAny(meta, fields) {
		return c
	}
	s := metaScanner{b: meta}
	if !s.consume('{') {
		return c
	}
	if s.consume('}') {
		return c
	}
	for {
		name, ok := s.str()
		if !ok || !s.consume(':') {
			return c
		}
		key, isField := fieldOf(name, fields)
		if isField && s.peek() == '"' {
			v, ok := s.str()
			if !ok {
				return c
			}
			if _, dup := c[key]; dup {
				return c // duplicate member names: malformed
			}
			if len(v) > 2 && len(v)-2 <= pmcp.MaxTraceValueLen {
				if val, ok := unquote(v); ok && val != "" && len(val) <= pmcp.MaxTraceValueLen {
					c[key] = val
				}
			}
		} else if !s.skipValue() {
			return c
		}
		if s.consume(',') {
			continue
		}
		return c // '}' or malformed
	}
}

// fieldOf returns the field that a quoted member name names.
func fieldOf(quoted []byte, fields []string) (string, bool) {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		u, ok := unquote(quoted)
		if !ok {
			return "", false
		}
		name = []byte(u)
	}
	for _, f := range fields {
		if string(name) == f {
			return f, true
		}
	}
	return "", false
}

// unquote decodes a JSON string token; it fails on invalid UTF-8.
func unquote(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		if !utf8.Valid(inner) {
			return "", false
		}
		return string(inner), true
	}
	u, err := jsontext.AppendUnquote(nil, quoted)
	if err != nil {
		return "", false
	}
	return string(u), true
}

// metaScanner walks a JSON text without decoding it. Whitespace before a
// token is skipped by every method.
type metaScanner struct {
	b []byte
	i int
}

func (s *metaScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next token's first byte, 0 at the end.
func (s *metaScanner) peek() byte {
	s.ws()
	if s.i == len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// consume reads c if it is the next token.
func (s *metaScanner) consume(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// str reads a string token and returns it with its quotes.
func (s *metaScanner) str() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start:s.i], true
		case c == '\\':
			s.i++ // the escaped byte cannot end the string
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// skipValue skips one value: a string, an object or array (with what
// it nests, by depth, without recursion), or a number or literal.
func (s *metaScanner) skipValue() bool {
	switch s.peek() {
	case 0, ',', ':', '}', ']':
		return false
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return false
}

// mentionsAny reports whether meta contains any of fields as a quoted
// string: a cheap test that spares decoding the (often large) _meta of
// requests that carry no trace context. It looks at what follows each
// quote, in one pass over meta. A member name escaped in the JSON text is
// missed, which only costs that request its parent.
func mentionsAny(meta []byte, fields []string) bool {
	for i := 0; i < len(meta); {
		j := bytes.IndexByte(meta[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		rest := meta[i:]
		for _, f := range fields {
			if len(rest) > len(f) && rest[len(f)] == '"' && string(rest[:len(f)]) == f {
				return true
			}
		}
	}
	return false
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
