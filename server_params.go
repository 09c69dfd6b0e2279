package pmcp

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/jsonskip"
)

// This file holds the one-pass reading of a request's params that the hot
// path uses instead of the separate decodes of an envelope (for _meta), of
// _meta itself, of the method's params struct and, over HTTP, of the
// transport's peek at the body.
//
// The scan only ever takes a shortcut that gives the same values as those
// decodes: whenever its result is not conclusive (a syntax error, a
// duplicate name, a member of an unexpected JSON type, a member it does
// not read itself), the dispatcher runs the original decodes, unchanged,
// so every error keeps its code and wording. server_params_test.go
// checks the equivalence.

// reqParams is what one pass over a request's params found. Raw values are
// capacity-clipped sub-slices of the params (nil when the member is
// absent); they are not copied, as the params themselves are not.
type reqParams struct {
	// ok: the params were absent, or an object read to its end without
	// error. Nothing below is meaningful otherwise.
	ok bool
	// present: there were params at all.
	present bool
	// metaOK: _meta is an object, whose members below were read.
	metaOK bool
	// infoDecoded: clientInfo is an object whose members json reads are
	// all strings or null, held raw in infoRaw (decodeMeta decodes them
	// into infoVal as Unmarshal would, unless the server kept them).
	infoDecoded bool
	// nameIsStr, uriIsStr: name, uri are strings, decoded in nameStr, uriStr.
	nameIsStr, uriIsStr bool
	// callOK: call holds what decodeParams[CallToolParams] would return.
	callOK bool

	// Raw members of params; _meta, arguments, task and inputResponses
	// are in call.
	name, uri, requestState jsontext.Value
	// taskID is params.taskId, the Mcp-Name of tasks/get|update|cancel.
	taskID jsontext.Value
	// Raw members of _meta.
	version, caps, info, level, progress jsontext.Value

	nameStr, uriStr string
	call            CallToolParams

	// The values _meta's pointers refer to, so that decoding them takes
	// no allocation of its own.
	infoRaw    implRaw
	infoVal    Implementation
	capsVal    ClientCapabilities
	versionVal string
	levelVal   string
}

// paramScanner is a pooled JSON reader over a byte slice, in one of two
// modes.
//
// By default it reads with a jsontext.Decoder whose options are jsontext's
// defaults, as strict as json.Unmarshal: invalid JSON, invalid UTF-8 and
// duplicate names stop the scan.
//
// validated (scanValidated) is for bytes a decoder as strict has already
// read whole: the params of a message jsonrpc.Decode returned. Validating
// them again cost as much as the rest of the request's JSON; the scanner
// then only finds where names and values end (jsonskip), which gives the
// same names and raw values on valid JSON. server_params_test.go checks
// the two modes against each other.
type paramScanner struct {
	buf     bytes.Buffer
	dec     jsontext.Decoder
	scratch []byte

	validated bool
	data      []byte // validated mode: the input, read from pos
	pos       int
}

var paramScannerPool = sync.Pool{New: func() any { return new(paramScanner) }}

func (sc *paramScanner) release() {
	sc.validated, sc.data, sc.pos = false, nil, 0
	sc.buf = bytes.Buffer{}
	sc.dec.Reset(&sc.buf) // drop the reference to the data
	if cap(sc.scratch) > 1<<10 {
		sc.scratch = nil
	}
	paramScannerPool.Put(sc)
}

// begin resets the scanner to data and reads the '{' it must start with.
// Raw values read afterwards are sub-slices of data.
func (sc *paramScanner) begin(data []byte) bool {
	if sc.validated {
		sc.data, sc.pos = data, 0
		if sc.peek() != '{' {
			return false
		}
		sc.pos++
		return true
	}
	sc.buf = *bytes.NewBuffer(data)
	sc.dec.Reset(&sc.buf)
	d := &sc.dec
	if d.PeekKind() != '{' {
		return false
	}
	_, err := d.ReadToken()
	return err == nil
}

// end reads the '}' of the top-level object and checks that nothing
// follows.
func (sc *paramScanner) end() bool {
	if sc.validated {
		if sc.peek() != '}' {
			return false
		}
		sc.pos++
		return sc.peek() == 0 && sc.pos == len(sc.data)
	}
	if _, err := sc.dec.ReadToken(); err != nil {
		return false
	}
	_, err := sc.dec.ReadToken()
	return err == io.EOF
}

// nextName reads the next member name of the current object, unescaped
// and valid until the next call; ok is false at the end of the object
// (and on an error, which the next read reports again).
func (sc *paramScanner) nextName() (name []byte, ok bool) {
	if sc.peek() != '"' {
		return nil, false
	}
	var raw []byte
	if sc.validated {
		start := sc.pos
		sc.pos = min(jsonskip.String(sc.data, start+1)+1, len(sc.data))
		if raw = sc.data[start:sc.pos]; len(raw) < 2 {
			return nil, false
		}
	} else {
		var err error
		if raw, err = sc.dec.ReadValue(); err != nil {
			return nil, false
		}
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], true
	}
	sc.scratch, _ = jsontext.AppendUnquote(sc.scratch[:0], raw) // raw was validated
	return sc.scratch, true
}

// value reads the next value, capacity-clipped.
func (sc *paramScanner) value() (jsontext.Value, bool) {
	if sc.validated {
		if k := sc.peek(); k == 0 || k == '}' || k == ']' {
			return nil, false
		}
		start := sc.pos
		sc.pos = jsonskip.Value(sc.data, start)
		v := sc.data[start:sc.pos]
		return v[:len(v):len(v)], true
	}
	v, err := sc.dec.ReadValue()
	if err != nil {
		return nil, false
	}
	return v[:len(v):len(v)], true
}

// descend reads the '{' of the object value that follows a member name
// and returns the offset in data where that value starts.
func (sc *paramScanner) descend(data []byte) (start int, ok bool) {
	if sc.validated {
		if sc.peek() != '{' {
			return 0, false
		}
		sc.pos++
		return sc.pos - 1, true
	}
	start = int(sc.dec.InputOffset())
	for start < len(data) {
		c := data[start]
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ':' {
			break
		}
		start++
	}
	if _, err := sc.dec.ReadToken(); err != nil || start >= len(data) || data[start] != '{' {
		return 0, false
	}
	return start, true
}

// ascend reads the '}' of a nested object and returns the object, from
// start, as a raw value.
func (sc *paramScanner) ascend(data []byte, start int) (jsontext.Value, bool) {
	if sc.validated {
		if sc.peek() != '}' {
			return nil, false
		}
		sc.pos++
		v := jsontext.Value(data[start:sc.pos])
		return v[:len(v):len(v)], true
	}
	if _, err := sc.dec.ReadToken(); err != nil {
		return nil, false
	}
	v := jsontext.Value(data[start:sc.dec.InputOffset()])
	return v[:len(v):len(v)], true
}

// peek returns the kind of the next token, as jsontext.Decoder.PeekKind
// does: 0 at the end of the input (or on an error, in the decoder's mode).
// In validated mode it steps over the separators (',' and ':') and the
// whitespace before the token.
func (sc *paramScanner) peek() jsontext.Kind {
	if !sc.validated {
		return sc.dec.PeekKind()
	}
	for ; sc.pos < len(sc.data); sc.pos++ {
		if k := tokenKinds[sc.data[sc.pos]]; k != skipByte {
			return k
		}
	}
	return 0
}

// skipByte marks in tokenKinds the bytes peek steps over.
const skipByte jsontext.Kind = 1

// tokenKinds is the jsontext.Kind of the token each byte starts (0: none),
// or skipByte for whitespace and separators.
var tokenKinds = func() (t [256]jsontext.Kind) {
	for _, c := range []byte(" \t\n\r,:") {
		t[c] = skipByte
	}
	for _, c := range []byte(`"{}[]ntf`) {
		t[c] = jsontext.Kind(c)
	}
	for _, c := range []byte("-0123456789") {
		t[c] = '0'
	}
	return t
}()

// scan reads params (a raw JSON object, or nothing) in one pass: the
// members of params, of _meta and of its clientInfo.
func (rp *reqParams) scan(params jsontext.Value) { rp.scanMode(params, false) }

// scanValidated is scan for params that a strict decoder has read whole
// already, without error: those of a message jsonrpc.Decode returned
// (its raw Params, as they are). It gives scan's result without
// validating them again (paramScanner).
func (rp *reqParams) scanValidated(params jsontext.Value) { rp.scanMode(params, true) }

func (rp *reqParams) scanMode(params jsontext.Value, validated bool) {
	*rp = reqParams{}
	if len(params) == 0 {
		rp.ok = true
		rp.callOK = true
		return
	}
	rp.present = true
	sc := paramScannerPool.Get().(*paramScanner)
	sc.validated = validated
	rp.ok = rp.scanParams(sc, params)
	sc.release()
	if !rp.ok {
		return
	}
	rp.nameStr, rp.nameIsStr = stringValue(rp.name)
	rp.uriStr, rp.uriIsStr = stringValue(rp.uri)
	rp.buildCall()
}

func (rp *reqParams) scanParams(sc *paramScanner, data []byte) bool {
	if !sc.begin(data) {
		return false
	}
	for {
		name, ok := sc.nextName()
		if !ok {
			break
		}
		if string(name) == "_meta" && sc.peek() == '{' {
			start, ok := sc.descend(data)
			if !ok || !rp.scanMeta(sc, data) {
				return false
			}
			if rp.call.Meta, ok = sc.ascend(data, start); !ok {
				return false
			}
			rp.metaOK = true
			continue
		}
		var dst *jsontext.Value
		switch string(name) {
		case "_meta":
			dst = &rp.call.Meta
		case "name":
			dst = &rp.name
		case "uri":
			dst = &rp.uri
		case "taskId":
			dst = &rp.taskID
		case "arguments":
			dst = &rp.call.Arguments
		case "task":
			dst = &rp.call.Task
		case "inputResponses":
			dst = &rp.call.InputResponses
		case "requestState":
			dst = &rp.requestState
		}
		v, ok := sc.value()
		if !ok {
			return false
		}
		if dst != nil {
			*dst = v
		}
	}
	return sc.end()
}

// scanMeta reads the members of _meta, after its '{' and up to (not
// including) its '}'.
func (rp *reqParams) scanMeta(sc *paramScanner, data []byte) bool {
	for {
		name, ok := sc.nextName()
		if !ok {
			break
		}
		if string(name) == MetaClientInfo && sc.peek() == '{' {
			start, ok := sc.descend(data)
			if !ok {
				return false
			}
			simple, ok := scanImplementation(sc, &rp.infoRaw)
			if !ok {
				return false
			}
			if rp.info, ok = sc.ascend(data, start); !ok {
				return false
			}
			rp.infoDecoded = simple
			continue
		}
		var dst *jsontext.Value
		switch string(name) {
		case MetaProtocolVersion:
			dst = &rp.version
		case MetaClientCapabilities:
			dst = &rp.caps
		case MetaClientInfo:
			dst = &rp.info
		case MetaLogLevel:
			dst = &rp.level
		case "progressToken":
			dst = &rp.progress
		}
		v, ok := sc.value()
		if !ok {
			return false
		}
		if dst != nil {
			*dst = v
		}
	}
	return sc.peek() == '}'
}

// implRaw holds the raw string (or null) members of an Implementation
// that Unmarshal reads: name, title, version, description, websiteUrl.
type implRaw [5]jsontext.Value

// scanImplementation reads the members of an Implementation object, after
// its '{' and up to (not including) its '}', keeping the raw values of
// those Unmarshal reads in raw. simple reports that each of them was a
// string or null (and there were no icons), so that decodeImplementation
// gives what Unmarshal would produce.
func scanImplementation(sc *paramScanner, raw *implRaw) (simple, ok bool) {
	simple = true
	for {
		name, ok := sc.nextName()
		if !ok {
			break
		}
		i := -1
		switch string(name) {
		case "name":
			i = 0
		case "title":
			i = 1
		case "version":
			i = 2
		case "description":
			i = 3
		case "websiteUrl":
			i = 4
		case "icons":
			simple = false
		}
		v, ok := sc.value()
		if !ok {
			return false, false
		}
		if i < 0 {
			continue
		}
		if k := v.Kind(); k != 'n' && k != '"' {
			simple = false
		}
		raw[i] = v
	}
	return simple, sc.peek() == '}'
}

// decodeImplementation decodes what scanImplementation kept into out;
// false if a string does not decode (the caller then uses Unmarshal).
func decodeImplementation(raw *implRaw, out *Implementation) bool {
	*out = Implementation{}
	for i, dst := range [...]*string{&out.Name, &out.Title, &out.Version, &out.Description, &out.WebsiteURL} {
		if v := raw[i]; len(v) > 0 && v.Kind() == '"' {
			s, ok := stringValue(v)
			if !ok {
				return false
			}
			*dst = s
		}
	}
	return true
}

// stringValue decodes a raw JSON string.
func stringValue(v jsontext.Value) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return internString(v[1 : len(v)-1]), true
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// internString returns b as a string, without allocating for the protocol
// versions and logging levels that requests repeat.
func internString(b []byte) string {
	switch string(b) {
	case Version20260728:
		return Version20260728
	case Version20251125:
		return Version20251125
	}
	for _, n := range levelNames[LevelDebug : LevelEmergency+1] {
		if n == string(b) {
			return n
		}
	}
	return string(b)
}

// buildCall completes call as decodeParams[CallToolParams] would: raw
// members verbatim (null included), name and requestState decoded, and
// json's rules for null (a zero string, a nil pointer).
func (rp *reqParams) buildCall() {
	c := &rp.call
	switch {
	case len(rp.name) == 0:
	case rp.nameIsStr:
		c.Name = rp.nameStr
	case rp.name.Kind() == 'n':
	default:
		return // decodeParams reports the type error
	}
	switch {
	case len(rp.requestState) == 0, rp.requestState.Kind() == 'n':
	default:
		s, ok := stringValue(rp.requestState)
		if !ok {
			return
		}
		c.RequestState = &s
	}
	rp.callOK = true
}

// isEmptyObject reports whether v is {} (whitespace allowed inside).
func isEmptyObject(v jsontext.Value) bool {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// metaCache keeps the latest client capabilities and client info that
// modern requests carried, decoded, with the bytes they came from: a
// client program sends the same ones with every request, and requests
// whose bytes are equal share the decoded values (clientCaps,
// clientInfo), as a legacy session's handshake is shared by the sessions
// of the same program (Server.initialize). Shared values are read-only,
// as RequestHandlerExtra.ClientCapabilities and ClientInfo are.
type metaCache struct {
	caps atomic.Pointer[keptCaps]
	info atomic.Pointer[keptInfo]
}

// keptCaps and keptInfo are immutable once made.
type keptCaps struct {
	raw  []byte
	caps ClientCapabilities
}

type keptInfo struct {
	raw  []byte
	info Implementation
}

// maxKeptMetaBytes: values longer than this are decoded every time.
const maxKeptMetaBytes = 4 << 10

// clientCaps decodes a modern request's clientCapabilities object raw, or
// returns the kept value when raw is byte-identical to its bytes (decoding
// them, maps and pointers, cost a dozen allocations and more instructions
// than the rest of the params scan). mc may be nil: no sharing. nil when
// raw does not decode.
func clientCaps(raw jsontext.Value, mc *metaCache, scratch *ClientCapabilities) *ClientCapabilities {
	var kept *atomic.Pointer[keptCaps]
	if mc != nil {
		kept = &mc.caps
		if k := kept.Load(); k != nil && bytes.Equal(k.raw, raw) {
			return &k.caps
		}
	}
	if kept == nil || len(raw) > maxKeptMetaBytes {
		*scratch = ClientCapabilities{}
		if Unmarshal(raw, scratch) != nil {
			return nil
		}
		return scratch
	}
	k := &keptCaps{raw: bytes.Clone(raw)}
	if Unmarshal(raw, &k.caps) != nil {
		return nil
	}
	kept.Store(k)
	return &k.caps
}

// decodeMeta fills meta from the scanned _meta as Unmarshal into
// requestMeta would. It reports false when it cannot be sure, and the
// caller then decodes _meta the original way. mc shares decoded client
// capabilities and info between requests (metaCache); nil decodes them for
// this request alone.
func (rp *reqParams) decodeMeta(meta *requestMeta, mc *metaCache) bool {
	if len(rp.call.Meta) == 0 {
		return true
	}
	if !rp.metaOK {
		return false // not an object, or unreadable: the original path reports it
	}
	var ok bool
	if meta.ProtocolVersion, ok = optString(rp.version, &rp.versionVal); !ok {
		return false
	}
	if meta.LogLevel, ok = optString(rp.level, &rp.levelVal); !ok {
		return false
	}
	switch {
	case len(rp.caps) == 0, rp.caps.Kind() == 'n':
	case isEmptyObject(rp.caps):
		rp.capsVal = ClientCapabilities{}
		meta.ClientCapabilities = &rp.capsVal
	case rp.caps.Kind() == '{':
		if meta.ClientCapabilities = clientCaps(rp.caps, mc, &rp.capsVal); meta.ClientCapabilities == nil {
			return false
		}
	default:
		return false
	}
	switch {
	case len(rp.info) == 0, rp.info.Kind() == 'n':
	case rp.infoDecoded && rp.clientInfo(meta, mc):
	case rp.info.Kind() == '{':
		rp.infoVal = Implementation{}
		if Unmarshal(rp.info, &rp.infoVal) != nil {
			return false
		}
		meta.ClientInfo = &rp.infoVal
	default:
		return false
	}
	meta.ProgressToken = rp.progress
	return true
}

// clientInfo sets meta.ClientInfo from a clientInfo object that
// scanImplementation found simple: the kept value when rp.info is
// byte-identical to its bytes (two or three strings fewer to allocate per
// request), else decoded (and kept, when mc is not nil). false when a
// string does not decode.
func (rp *reqParams) clientInfo(meta *requestMeta, mc *metaCache) bool {
	if mc != nil {
		if k := mc.info.Load(); k != nil && bytes.Equal(k.raw, rp.info) {
			meta.ClientInfo = &k.info
			return true
		}
	}
	if mc == nil || len(rp.info) > maxKeptMetaBytes {
		if !decodeImplementation(&rp.infoRaw, &rp.infoVal) {
			return false
		}
		meta.ClientInfo = &rp.infoVal
		return true
	}
	k := &keptInfo{raw: bytes.Clone(rp.info)}
	if !decodeImplementation(&rp.infoRaw, &k.info) {
		return false
	}
	mc.info.Store(k)
	meta.ClientInfo = &k.info
	return true
}

// optString decodes a member of type *string: absent or null is nil,
// else slot, which holds the string (a field of the reqParams: no
// allocation of its own).
func optString(v jsontext.Value, slot *string) (*string, bool) {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, true
	}
	s, ok := stringValue(v)
	if !ok {
		return nil, false
	}
	*slot = s
	return slot, true
}

// target returns the member of the params that names what the method of
// row acts on (row.target: the tool, prompt, resource or task; what
// Mcp-Name carries), raw, and decoded when it is a tool or prompt name or
// a resource URI that is a string ("" otherwise). The HTTP headers, the
// scope check, Request.Name and the access log read it. row may be nil
// (a method the table does not have): no target.
func (rp *reqParams) target(row *methodRow) (jsontext.Value, string) {
	if row == nil {
		return nil, ""
	}
	switch row.target {
	case paramName:
		return rp.name, rp.nameStr
	case paramURI:
		return rp.uri, rp.uriStr
	case paramTaskID:
		return rp.taskID, ""
	}
	return nil, ""
}

// peek derives the transport's view of the request from the scan, for
// the Streamable HTTP transport (its era is classify's, from eraInput).
// When the scan failed (params that are not an object, or that the
// dispatcher's own decode rejects with -32602 before deciding any era)
// the view is that of a request without params.
func (rp *reqParams) peek(method string) peekedRequest {
	out := peekedRequest{row: methodOf(method)}
	if rp.ok && rp.present {
		out.paramsParse = true
		out.name, out.nameStr = rp.target(out.row)
		if out.row != nil {
			switch out.row.target {
			case paramName:
				out.nameIsStr = rp.nameIsStr
			case paramURI:
				out.nameIsStr = rp.uriIsStr
			}
		}
		if rp.metaOK {
			if rp.version.Kind() == '"' {
				out.version, out.hasVersion = stringValue(rp.version)
			}
		}
	}
	return out
}

// eraInput returns the facts of the body that the era decision reads, as
// the scan found them: the method and whether _meta names a protocol
// version or client capabilities (null counts as absent). A failed scan
// reads as params without _meta, as in peek: the dispatcher's decode then
// fails before the era matters.
func (rp *reqParams) eraInput(method string) eraInput {
	in := eraInput{method: method}
	if rp.ok && rp.present && rp.metaOK {
		in.metaVersion, in.metaCaps = present(rp.version), present(rp.caps)
	}
	return in
}
