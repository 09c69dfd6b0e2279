package proxy

import (
	"bytes"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/jsonskip"
)

// The proxy rewrites one member of an upstream request's _meta on every
// call (appsClient: the per-request client capabilities). Decoding the
// params into maps and encoding them again cost dozens of allocations per
// call; metaMember finds the member's bytes in one strict scan instead,
// and spliceValue replaces them.

// metaScanner is a pooled decoder over a byte slice (a bytes.Buffer: the
// decoder reads it without copying).
type metaScanner struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

var metaScanners = sync.Pool{New: func() any { return new(metaScanner) }}

// scan returns a pooled decoder reading b; give it back with done.
func scan(b []byte) *metaScanner {
	sc := metaScanners.Get().(*metaScanner)
	sc.buf = *bytes.NewBuffer(b)
	sc.dec.Reset(&sc.buf)
	return sc
}

// done drops the reference to the scanned bytes and pools sc again.
func (sc *metaScanner) done() {
	sc.buf = bytes.Buffer{}
	sc.dec.Reset(&sc.buf)
	metaScanners.Put(sc)
}

// metaMember returns where the value of the member key of params' _meta
// lies in params: params[start:end]. ok is false when params is not a
// valid JSON object (duplicate names included: the decoder's defaults) or
// has no such member under names written without escapes; the caller then
// takes the general path, which reports or handles it.
func metaMember(params jsontext.Value, key string) (start, end int, ok bool) {
	sc := scan(params)
	defer sc.done()
	d := &sc.dec
	if d.PeekKind() != '{' {
		return 0, 0, false
	}
	if _, err := d.ReadToken(); err != nil {
		return 0, 0, false
	}
	found := false
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return 0, 0, false
		}
		if found || !plainName(name, "_meta") || d.PeekKind() != '{' {
			if d.SkipValue() != nil {
				return 0, 0, false
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return 0, 0, false
		}
		for d.PeekKind() == '"' {
			name, err := d.ReadValue()
			if err != nil {
				return 0, 0, false
			}
			isKey := plainName(name, key)
			v, err := d.ReadValue()
			if err != nil {
				return 0, 0, false
			}
			if isKey && !found {
				end = int(d.InputOffset())
				start, found = end-len(v), true
			}
		}
		if _, err := d.ReadToken(); err != nil { // the '}' of _meta
			return 0, 0, false
		}
	}
	// The rest is read too: a later duplicate or invalid byte refuses the
	// whole, as decoding it would.
	if _, err := d.ReadToken(); err != nil {
		return 0, 0, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return 0, 0, false
	}
	return start, end, found
}

// plainName reports whether the raw JSON string name is "want" written
// without escapes.
func plainName(name jsontext.Value, want string) bool {
	return len(name) == len(want)+2 && string(name[1:len(name)-1]) == want
}

// spliceValue returns a copy of b with b[start:end] replaced by v.
func spliceValue(b []byte, start, end int, v []byte) jsontext.Value {
	out := make([]byte, 0, len(b)-(end-start)+len(v))
	out = append(out, b[:start]...)
	out = append(out, v...)
	return append(out, b[end:]...)
}

// managedMeta reports whether a _meta member name is one the client
// manages and forwardMeta leaves out: progressToken and the
// io.modelcontextprotocol/ ones.
func managedMeta[T ~string | ~[]byte](name T) bool {
	const prefix = "io.modelcontextprotocol/"
	return string(name) == "progressToken" || len(name) >= len(prefix) && string(name[:len(prefix)]) == prefix
}

// readMeta reads the object d is at, to its '}', and reports whether all
// its member names are managed ones (managedMeta) written without
// escapes; ok is false when the object does not read.
func readMeta(d *jsontext.Decoder) (managed, ok bool) {
	if d.PeekKind() != '{' {
		return false, false
	}
	if _, err := d.ReadToken(); err != nil {
		return false, false
	}
	managed = true
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return false, false
		}
		if bytes.IndexByte(name, '\\') >= 0 || !managedMeta(name[1:len(name)-1]) {
			managed = false
		}
		if d.SkipValue() != nil {
			return false, false
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return false, false
	}
	return managed, true
}

// onlyManaged reports whether the _meta object raw has only members the
// client manages, written without escapes (readMeta): forwardMeta's
// answer is nil then, found without decoding raw into a map. false sends
// the caller down the general path.
func onlyManaged(raw jsontext.Value) bool {
	sc := scan(raw)
	defer sc.done()
	d := &sc.dec
	if managed, ok := readMeta(d); !managed || !ok {
		return false
	}
	_, err := d.ReadToken()
	return err == io.EOF
}

// validatedManaged is onlyManaged for a _meta object that a strict decoder
// has read whole already (the server's, handed on by
// pmcp.Request.CallToolParams): it finds the member names by their quotes
// and the values by their delimiters (jsonskip), without validating the
// bytes again. On valid JSON it answers as onlyManaged; a name written
// with an escape is not managed, as there.
func validatedManaged(meta []byte) bool {
	i := jsonskip.Space(meta, 0)
	if i >= len(meta) || meta[i] != '{' {
		return false
	}
	for i++; ; {
		if i = jsonskip.Space(meta, i); i >= len(meta) {
			return false
		}
		switch meta[i] {
		case '}':
			return jsonskip.Space(meta, i+1) == len(meta)
		case '"':
		default:
			return false
		}
		end := jsonskip.String(meta, i+1)
		if end >= len(meta) {
			return false
		}
		if name := meta[i+1 : end]; bytes.IndexByte(name, '\\') >= 0 || !managedMeta(name) {
			return false
		}
		if i = jsonskip.Space(meta, end+1); i >= len(meta) || meta[i] != ':' {
			return false
		}
		i = jsonskip.Value(meta, jsonskip.Space(meta, i+1))
		if i = jsonskip.Space(meta, i); i < len(meta) && meta[i] == ',' {
			i++
		}
	}
}
