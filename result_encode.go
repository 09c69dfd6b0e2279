package pmcp

import (
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file encodes the most common result, a tools/call result of text
// blocks, without reflection. The output is byte for byte what json.Marshal
// writes (result_encode_test.go checks it); any other shape, and any value
// the direct encoder is unsure of, goes through json.Marshal as before.

// appendResult appends the JSON of a handler's result to dst, as
// json.Marshal would encode it, when it has a shape handled here; ok is
// false otherwise (dst is then returned unchanged).
func appendResult(dst []byte, res any) (_ []byte, ok bool) {
	r, isTool := res.(*CallToolResult)
	if !isTool || r == nil || r.StructuredContent != nil {
		return dst, false
	}
	start := len(dst)
	fail := func() ([]byte, bool) { return dst[:start], false }
	var err error
	dst = append(dst, '{')
	if len(r.Meta) > 0 {
		if dst, ok = appendServerInfoMeta(dst, r.Meta); !ok {
			return fail()
		}
		dst = append(dst, ',')
	}
	if r.ResultType != "" {
		dst = append(dst, `"resultType":`...)
		if dst, err = jsontext.AppendQuote(dst, r.ResultType); err != nil {
			return fail()
		}
		dst = append(dst, ',')
	}
	dst = append(dst, `"content":[`...)
	for i, c := range r.Content {
		t, isText := c.(*TextContent)
		if !isText || t == nil || t.Annotations != nil || len(t.Meta) > 0 {
			return fail()
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		if dst, err = jsontext.AppendQuote(dst, t.Text); err != nil {
			return fail()
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}'), true
}

// appendServerInfoMeta appends "_meta" when it holds only the serverInfo
// that decorateModern adds.
func appendServerInfoMeta(dst []byte, m Meta) ([]byte, bool) {
	if len(m) != 1 {
		return dst, false
	}
	info, ok := m[MetaServerInfo].(*Implementation)
	if !ok || info == nil || len(info.Icons) > 0 {
		return dst, false
	}
	dst = append(dst, `"_meta":{"`+MetaServerInfo+`":{"name":`...)
	var err error
	if dst, err = jsontext.AppendQuote(dst, info.Name); err != nil {
		return dst, false
	}
	if info.Title != "" {
		dst = append(dst, `,"title":`...)
		if dst, err = jsontext.AppendQuote(dst, info.Title); err != nil {
			return dst, false
		}
	}
	dst = append(dst, `,"version":`...)
	if dst, err = jsontext.AppendQuote(dst, info.Version); err != nil {
		return dst, false
	}
	if info.Description != "" {
		dst = append(dst, `,"description":`...)
		if dst, err = jsontext.AppendQuote(dst, info.Description); err != nil {
			return dst, false
		}
	}
	if info.WebsiteURL != "" {
		dst = append(dst, `,"websiteUrl":`...)
		if dst, err = jsontext.AppendQuote(dst, info.WebsiteURL); err != nil {
			return dst, false
		}
	}
	return append(dst, "}}"...), true
}

// marshalResult is the rpcconn.Conn result marshaler of Serve: the direct
// encoder, else json.Marshal (the Conn's default).
func marshalResult(v any) (jsontext.Value, error) {
	if r, ok := v.(*CallToolResult); ok && r != nil {
		size := 64
		if len(r.Meta) > 0 {
			size += 128
		}
		for _, c := range r.Content {
			if t, ok := c.(*TextContent); ok && t != nil {
				size += 32 + len(t.Text)
			}
		}
		if b, ok := appendResult(make([]byte, 0, size), v); ok {
			return b, nil
		}
	}
	b, err := json.Marshal(v)
	return jsontext.Value(b), err
}

// bufPool holds the buffers responses are encoded into when they are
// written out at once (JSON replies); see getBuf.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

// putBuf returns b to the pool, unless it grew large.
func putBuf(p *[]byte, b []byte) {
	if cap(b) > 64<<10 {
		return
	}
	*p = b[:0]
	bufPool.Put(p)
}
