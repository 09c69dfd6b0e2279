package pmcp

import (
	"bytes"
	"context"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/jsonskip"
	"github.com/gopmcp/pmcp/internal/relay"
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

// decodeToolResult is callTool's decoding of a round's result in one
// pass: decodeLeanToolResult, else decodeTextToolResult (false: neither
// took it). The serverInfo is left out when ctx promises that the caller
// deletes it (internal/relay).
func decodeToolResult(ctx context.Context, raw jsontext.Value, res *CallToolResult) bool {
	drop := len(raw) > len(leanResultInfo) && string(raw[1:1+len(leanResultInfo)]) == leanResultInfo && relay.ServerInfoDropped(ctx)
	return decodeLeanToolResult(raw, res, drop) || decodeTextToolResult(raw, res)
}

// leanResultInfo begins the _meta of a result that holds the serverInfo
// of the server that wrote it (decorateModern), as pmcp servers write it.
const leanResultInfo = `"_meta":{"` + MetaServerInfo + `":`

// decodeLeanToolResult decodes raw into res when it is a tools/call result
// of text blocks written as pmcp servers write one, compact and in their
// member order:
//
//	{["_meta":{"io.modelcontextprotocol/serverInfo":{...}},]["resultType":"complete",]"content":[{"type":"text","text":"..."},...][,"isError":true|false]}
//
// reading its bytes without a decoder: the proxy forwards such results,
// and decoding them (the serverInfo above all, a map of boxed strings it
// then deletes) was most of what it added to a call. The _meta is taken
// only when dropInfo (the caller promised to delete the serverInfo:
// internal/relay) and is left out of res; its serverInfo must be a valid
// object of string members. Anything else (other members or orders,
// whitespace, other blocks, malformed JSON) is declined: ok false, res
// zeroed, left to decodeTextToolResult. What it decodes is what
// decodeTextToolResult decodes with the serverInfo deleted
// (client_result_lean_test.go compares them).
func decodeLeanToolResult(raw []byte, res *CallToolResult, dropInfo bool) (ok bool) {
	*res = CallToolResult{}
	b := raw
	if !cutPrefix(&b, "{") {
		return false
	}
	if cutPrefix(&b, leanResultInfo) {
		n, plain := stringsObjectLen(b)
		if !dropInfo || n == 0 || !plain && !jsontext.Value(b[:n]).IsValid() {
			return false
		}
		b = b[n:]
		if !cutPrefix(&b, "},") {
			return false
		}
	}
	rt := ""
	if cutPrefix(&b, `"resultType":"`+resultTypeComplete+`",`) {
		rt = resultTypeComplete
	}
	if !cutPrefix(&b, `"content":[`) {
		return false
	}
	content := make([]Content, 0, 1)
	for len(b) > 0 && b[0] != ']' {
		if len(content) > 0 && !cutPrefix(&b, ",") || !cutPrefix(&b, `{"type":"text","text":`) {
			return false
		}
		n := stringLen(b)
		if n == 0 {
			return false
		}
		text, ok := leanString(b[:n])
		if !ok {
			return false
		}
		b = b[n:]
		if !cutPrefix(&b, "}") {
			return false
		}
		content = append(content, &TextContent{Text: text})
	}
	if !cutPrefix(&b, "]") {
		return false
	}
	isError := cutPrefix(&b, `,"isError":true`)
	if !isError {
		cutPrefix(&b, `,"isError":false`)
	}
	if string(b) != "}" {
		return false
	}
	res.ResultType, res.Content, res.IsError = rt, content, isError
	return true
}

// cutPrefix removes prefix from *b, reporting whether it was there.
func cutPrefix(b *[]byte, prefix string) bool {
	if len(*b) < len(prefix) || string((*b)[:len(prefix)]) != prefix {
		return false
	}
	*b = (*b)[len(prefix):]
	return true
}

// stringLen is the length of the JSON string b begins with, quotes
// included (its escapes are not checked); 0 when b begins with none.
func stringLen(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return 0
	}
	if end := jsonskip.String(b, 1); end < len(b) {
		return end + 1
	}
	return 0
}

// stringsObjectLen is the length of the compact JSON object of string
// members b begins with; 0 when b begins with none. plain reports that
// the object is valid JSON as it is: its strings have no escapes, no
// control characters and no invalid UTF-8, and its names are distinct
// (else the caller checks it).
func stringsObjectLen(b []byte) (n int, plain bool) {
	if len(b) < 2 || b[0] != '{' {
		return 0, false
	}
	i := 1
	if b[i] == '}' {
		return 2, true
	}
	plain = true
	var names [8][]byte // the first names, to find one given twice
	for k := 0; ; k++ {
		for _, sep := range [...]byte{':', 0} {
			n := stringLen(b[i:])
			if n == 0 {
				return 0, false
			}
			s := b[i : i+n]
			if plain {
				_, plain = leanPlain(s)
			}
			if plain && sep != 0 {
				if k >= len(names) {
					plain = false
				} else {
					for _, seen := range names[:k] {
						plain = plain && string(seen) != string(s)
					}
					names[k] = s
				}
			}
			i += n
			if sep != 0 {
				if i >= len(b) || b[i] != sep {
					return 0, false
				}
				i++
			}
		}
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, plain
		default:
			return 0, false
		}
	}
}

// leanString decodes the JSON string q (quotes included) as a decoder
// does: an error for raw control characters, invalid UTF-8 and bad
// escapes.
func leanString(q []byte) (string, bool) {
	s, plain := leanPlain(q)
	if plain {
		return string(s), true
	}
	if s == nil {
		return "", false
	}
	u, err := jsontext.AppendUnquote(nil, q)
	if err != nil {
		return "", false
	}
	return string(u), true
}

// leanPlain reports whether the JSON string q (quotes included) is
// plain: no escapes, no control characters, valid UTF-8; s is then its
// text. s is nil (and plain false) when q is invalid for certain (a
// control character before any escape, or invalid UTF-8 without
// escapes), not nil when it has escapes to be read.
func leanPlain(q []byte) (s []byte, plain bool) {
	s = q[1 : len(q)-1]
	for _, c := range s {
		if c < ' ' {
			return nil, false
		}
		if c == '\\' {
			return s, false
		}
	}
	if !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}
