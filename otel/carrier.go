package otel

import (
	"bytes"
	"io"
	"slices"

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
// format itself. A malformed or absent _meta gives an empty carrier.
func MetaCarrierFromMeta(meta jsontext.Value, fields []string) MetaCarrier {
	c := MetaCarrier{}
	if len(meta) == 0 || !mentionsAny(meta, fields) {
		return c
	}
	dec := jsontext.NewDecoder(bytesReader(meta))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return c
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return c
		}
		key := name.String()
		if dec.PeekKind() == '"' && slices.Contains(fields, key) {
			v, err := dec.ReadToken()
			if err != nil {
				return c
			}
			if s := v.String(); s != "" && len(s) <= pmcp.MaxTraceValueLen {
				c[key] = s
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return c
		}
	}
	return c
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

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
