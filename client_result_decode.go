package pmcp

import (
	"bytes"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// The commonest result a client decodes, a tools/call result of text
// blocks, decoded without reflection: Unmarshal read each content block
// three times (the block, a probe of its type, the block into its type).
// decodeTextToolResult takes the shapes it is sure of and leaves every
// other one, and anything malformed, to Unmarshal (which reports it):
// what it decodes is exactly what Unmarshal would (client_result_decode_
// test.go compares them).

// resultDecoder is a pooled decoder over a byte slice, with the short
// member names of _meta objects it has met (the same few in every result:
// name, version...) kept to be used again instead of allocated.
type resultDecoder struct {
	buf   bytes.Buffer
	dec   jsontext.Decoder
	names map[string]string
}

// maxInternedNames bounds resultDecoder.names; maxInternedName the length
// of a name kept there.
const (
	maxInternedNames = 64
	maxInternedName  = 16
)

// name returns the member name whose raw JSON string (without escapes)
// is raw.
func (rd *resultDecoder) name(raw jsontext.Value) string {
	b := raw[1 : len(raw)-1]
	if len(b) > maxInternedName {
		return string(b)
	}
	if s, ok := rd.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if rd.names == nil {
		rd.names = make(map[string]string)
	}
	if len(rd.names) < maxInternedNames {
		rd.names[s] = s
	}
	return s
}

var resultDecoders = sync.Pool{New: func() any { return new(resultDecoder) }}

// decodeTextToolResult decodes raw into res when it is a tools/call result
// whose members are only _meta (of strings, booleans, nulls and objects of
// them), resultType, isError and content, and whose
// content blocks are text blocks of only type and text, every name
// written without escapes, and whose resultType, if any, is not empty (so
// that res.ResultType "" means none); ok is false (res zeroed) otherwise. res is
// written in place (it is where the caller's result is to be).
func decodeTextToolResult(raw jsontext.Value, res *CallToolResult) (ok bool) {
	rd := resultDecoders.Get().(*resultDecoder)
	rd.buf = *bytes.NewBuffer(raw)
	rd.dec.Reset(&rd.buf)
	defer func() {
		rd.buf = bytes.Buffer{}
		rd.dec.Reset(&rd.buf)
		resultDecoders.Put(rd)
	}()
	d := &rd.dec
	*res = CallToolResult{}
	out := res
	defer func() {
		if !ok {
			*res = CallToolResult{}
		}
	}()
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue() // raw: no string made
		if err != nil {
			return false
		}
		switch string(name) {
		case `"_meta"`:
			if d.PeekKind() != '{' {
				return false
			}
			m, ok := rd.decodeAnyObject()
			if !ok {
				return false
			}
			out.Meta = m
		case `"resultType"`:
			if d.PeekKind() != '"' {
				return false
			}
			v, err := d.ReadValue()
			if err != nil {
				return false
			}
			if out.ResultType = knownResultType(v); out.ResultType == "" {
				u, err := jsontext.AppendUnquote(nil, v)
				if err != nil || len(u) == 0 {
					return false // "" is no resultType: absent is
				}
				out.ResultType = string(u)
			}
		case `"isError"`:
			if k := d.PeekKind(); k != 't' && k != 'f' {
				return false
			}
			t, err := d.ReadToken()
			if err != nil {
				return false
			}
			out.IsError = t.Bool()
		case `"content"`:
			if !decodeTextBlocks(d, out) {
				return false
			}
		default:
			return false
		}
	}
	if t, err := d.ReadToken(); err != nil || t.Kind() != '}' {
		return false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return false
	}
	return true
}

// decodeAnyObject reads a JSON object as Unmarshal decodes one into a
// map[string]any, when its values are only strings, booleans, nulls and
// such objects and its names have no escapes (ok is false otherwise:
// numbers and arrays are left to Unmarshal).
func (rd *resultDecoder) decodeAnyObject() (map[string]any, bool) {
	d := &rd.dec
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return nil, false
	}
	m := map[string]any{}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return nil, false // a name with escapes: left to Unmarshal
		}
		key := rd.name(name) // before the value voids the name's bytes
		switch d.PeekKind() {
		case '"', 't', 'f', 'n':
			t, err := d.ReadToken()
			if err != nil {
				return nil, false
			}
			switch t.Kind() {
			case '"':
				m[key] = t.String()
			case 'n':
				m[key] = nil
			default:
				m[key] = t.Bool()
			}
		case '{':
			sub, ok := rd.decodeAnyObject()
			if !ok {
				return nil, false
			}
			m[key] = sub
		default:
			return nil, false
		}
	}
	if t, err := d.ReadToken(); err != nil || t.Kind() != '}' {
		return nil, false
	}
	return m, true
}

// knownResultType returns the resultType whose quoted form is q without
// allocating, or "".
func knownResultType(q jsontext.Value) string {
	for _, rt := range [...]string{resultTypeComplete, resultTypeInputRequired, ResultTypeTask} {
		if len(q) == len(rt)+2 && string(q[1:len(q)-1]) == rt {
			return rt
		}
	}
	return ""
}

// decodeTextBlocks reads a content array of text blocks into out.Content.
func decodeTextBlocks(d *jsontext.Decoder, out *CallToolResult) bool {
	if d.PeekKind() != '[' {
		return false
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	out.Content = make([]Content, 0, 1)
	for d.PeekKind() == '{' {
		if _, err := d.ReadToken(); err != nil {
			return false
		}
		var tc *TextContent
		typed := false
		for d.PeekKind() == '"' {
			name, err := d.ReadValue()
			if err != nil || d.PeekKind() != '"' {
				return false
			}
			switch string(name) {
			case `"type"`:
				v, err := d.ReadValue()
				if err != nil || string(v) != `"text"` {
					return false
				}
				typed = true
			case `"text"`:
				v, err := d.ReadToken()
				if err != nil {
					return false
				}
				tc = &TextContent{Text: v.String()}
			default:
				return false
			}
		}
		if _, err := d.ReadToken(); err != nil || !typed || tc == nil { // the '}'
			return false
		}
		out.Content = append(out.Content, tc)
	}
	_, err := d.ReadToken() // the ']'
	return err == nil
}
