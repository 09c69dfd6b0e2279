package pmcp

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Header names of the Streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerParamPrefix     = "Mcp-Param-"
	headerLastEventID     = "Last-Event-Id"

	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// paramHeader is one x-mcp-header annotation of a tool's input schema: the
// argument at path is mirrored into the header Mcp-Param-<name>. It is
// computed once, when the tool is registered.
type paramHeader struct {
	path   []string
	header string // canonical MIME form of "Mcp-Param-" + name
}

// maxParamHeaderDepth bounds how deep annotated properties may sit.
const maxParamHeaderDepth = 16

// schemaNode is the part of a JSON Schema x-mcp-header annotations live in.
type schemaNode struct {
	Type       jsontext.Value            `json:"type"`
	XMCPHeader jsontext.Value            `json:"x-mcp-header"`
	Properties map[string]jsontext.Value `json:"properties"`
}

// paramHeadersOf extracts the x-mcp-header annotations of an input schema.
// Annotations are only honoured on string, integer and boolean properties
// reached through "properties" chains; names must be HTTP tokens, unique
// case-insensitively. An invalid annotation is an error: clients drop such
// tools, so the server refuses to publish them.
func paramHeadersOf(schema jsontext.Value) ([]paramHeader, error) {
	if len(schema) == 0 || schema.Kind() != '{' {
		return nil, nil
	}
	var out []paramHeader
	seen := map[string]bool{}
	if err := collectParamHeaders(schema, nil, seen, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func collectParamHeaders(raw jsontext.Value, path []string, seen map[string]bool, out *[]paramHeader) error {
	var n schemaNode
	if err := json.Unmarshal(raw, &n); err != nil {
		// Not an object schema (a boolean schema, say): nothing to mirror.
		return nil
	}
	if len(n.XMCPHeader) > 0 {
		if len(path) == 0 {
			return fmt.Errorf("x-mcp-header is only allowed on properties")
		}
		var name string
		if err := json.Unmarshal(n.XMCPHeader, &name); err != nil || name == "" {
			return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", strings.Join(path, "."))
		}
		if !isToken(name) {
			return fmt.Errorf("property %q: x-mcp-header %q is not an HTTP token", strings.Join(path, "."), name)
		}
		var typ string
		_ = json.Unmarshal(n.Type, &typ)
		if typ != "string" && typ != "integer" && typ != "boolean" {
			return fmt.Errorf("property %q: x-mcp-header needs type string, integer or boolean, not %s", strings.Join(path, "."), n.Type)
		}
		lower := strings.ToLower(name)
		if seen[lower] {
			return fmt.Errorf("property %q: duplicate x-mcp-header %q", strings.Join(path, "."), name)
		}
		seen[lower] = true
		*out = append(*out, paramHeader{path: path, header: http.CanonicalHeaderKey(headerParamPrefix + name)})
	}
	if len(n.Properties) > 0 && len(path) < maxParamHeaderDepth {
		for name, sub := range n.Properties {
			p := make([]string, len(path)+1)
			copy(p, path)
			p[len(path)] = name
			if err := collectParamHeaders(sub, p, seen, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// headerValue returns a request header with optional whitespace trimmed,
// and whether it was present at all.
func headerValue(h http.Header, key string) (string, bool) {
	v, ok := h[key]
	if !ok || len(v) == 0 {
		return "", false
	}
	return strings.Trim(v[0], " \t"), true
}

// decodeHeaderText undoes the =?base64?...?= form of a header value. A
// value without both the prefix and the suffix is literal; a wrapped value
// must be valid, padded standard Base64.
func decodeHeaderText(v string) (string, bool) {
	if len(v) < len(base64Prefix)+len(base64Suffix) || !strings.HasPrefix(v, base64Prefix) || !strings.HasSuffix(v, base64Suffix) {
		return v, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v[len(base64Prefix) : len(v)-len(base64Suffix)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// headerMismatch is the -32020 error of the modern era.
type headerMismatch string

func (m headerMismatch) Error() string { return string(m) }

func mismatch(format string, args ...any) error {
	return headerMismatch(fmt.Sprintf(format, args...))
}

// modernPeek is the part of a request's params the transport must check
// against its headers. Raw values keep type errors for the dispatcher to
// report; arguments are only read (by argsPeek) for tools that mirror some.
type modernPeek struct {
	Meta jsontext.Value `json:"_meta"`
	Name jsontext.Value `json:"name"`
	URI  jsontext.Value `json:"uri"`
}

type argsPeek struct {
	Arguments jsontext.Value `json:"arguments"`
}

type peekMeta struct {
	ProtocolVersion    jsontext.Value `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities jsontext.Value `json:"io.modelcontextprotocol/clientCapabilities"`
}

// peekedRequest is what the transport learnt from one request's params.
type peekedRequest struct {
	modern      bool   // carries modern _meta (or is server/discover)
	version     string // _meta protocolVersion when it is a string
	hasVersion  bool
	name        jsontext.Value // params.name or params.uri, raw
	paramsParse bool           // params were an object and parsed
}

func present(v jsontext.Value) bool { return len(v) > 0 && v.Kind() != 'n' }

// peekRequest reads the members the transport needs, mirroring exactly the
// era decision of Server.handle (so header validation can never be skipped
// for a request the dispatcher serves as modern).
func peekRequest(method string, params jsontext.Value) peekedRequest {
	out := peekedRequest{modern: method == MethodDiscover}
	if len(params) == 0 || params.Kind() != '{' {
		return out
	}
	var p modernPeek
	if json.Unmarshal(params, &p) != nil {
		return out
	}
	out.paramsParse = true
	if method == MethodResourcesRead {
		out.name = p.URI
	} else {
		out.name = p.Name
	}
	if len(p.Meta) == 0 || p.Meta.Kind() != '{' {
		return out
	}
	var m peekMeta
	if json.Unmarshal(p.Meta, &m) != nil {
		return out
	}
	if present(m.ProtocolVersion) || present(m.ClientCapabilities) {
		out.modern = true
	}
	if m.ProtocolVersion.Kind() == '"' {
		if json.Unmarshal(m.ProtocolVersion, &out.version) == nil {
			out.hasVersion = true
		}
	}
	return out
}

// checkStandardHeaders validates MCP-Protocol-Version, Mcp-Method and
// Mcp-Name of a modern request against its body (SEP-2243).
func checkStandardHeaders(h http.Header, method string, pk *peekedRequest) error {
	if pk.hasVersion {
		v, ok := headerValue(h, headerProtocolVersion)
		if !ok {
			return mismatch("missing MCP-Protocol-Version header")
		}
		if v != pk.version {
			return mismatch("MCP-Protocol-Version header %q does not match _meta protocolVersion %q", v, pk.version)
		}
	}
	m, ok := headerValue(h, headerMethod)
	if !ok {
		return mismatch("missing Mcp-Method header")
	}
	if m != method {
		return mismatch("Mcp-Method header %q does not match the body method %q", m, method)
	}
	switch method {
	case MethodToolsCall, MethodPromptsGet, MethodResourcesRead:
	default:
		return nil
	}
	hv, hasHeader := headerValue(h, headerName)
	var body string
	hasBody := pk.name.Kind() == '"' && json.Unmarshal(pk.name, &body) == nil
	switch {
	case !hasHeader && !hasBody:
		return nil // the dispatcher reports the missing name
	case !hasHeader:
		return mismatch("missing Mcp-Name header")
	case !hasBody:
		return mismatch("Mcp-Name header present but the body has no name")
	}
	dv, ok := decodeHeaderText(hv)
	if !ok {
		return mismatch("Mcp-Name header has invalid Base64")
	}
	if dv != body {
		return mismatch("Mcp-Name header %q does not match the body value %q", hv, body)
	}
	return nil
}

// checkParamHeaders validates the Mcp-Param-* headers of a tools/call
// against the arguments, using the tool's registration-time mapping.
func checkParamHeaders(h http.Header, bindings []paramHeader, args jsontext.Value) error {
	var top map[string]jsontext.Value
	if args.Kind() == '{' {
		if json.Unmarshal(args, &top) != nil {
			top = nil
		}
	}
	for _, b := range bindings {
		hv, hasHeader := headerValue(h, b.header)
		val, found := lookupArg(top, b.path)
		if !found || val.Kind() == 'n' {
			if hasHeader {
				return mismatch("unexpected %s header: the argument %q is absent or null", b.header, strings.Join(b.path, "."))
			}
			continue
		}
		if !hasHeader {
			return mismatch("missing %s header for argument %q", b.header, strings.Join(b.path, "."))
		}
		dv, ok := decodeHeaderText(hv)
		if !ok {
			return mismatch("%s header has invalid Base64", b.header)
		}
		if !primitiveMatches(dv, val) {
			return mismatch("%s header does not match the argument %q", b.header, strings.Join(b.path, "."))
		}
	}
	return nil
}

func lookupArg(top map[string]jsontext.Value, path []string) (jsontext.Value, bool) {
	cur, ok := top[path[0]]
	if !ok {
		return nil, false
	}
	for _, k := range path[1:] {
		if cur.Kind() != '{' {
			return nil, false
		}
		var m map[string]jsontext.Value
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// primitiveMatches compares a decoded header value with a JSON argument:
// strings exactly, numbers numerically, booleans as true/false.
func primitiveMatches(hv string, v jsontext.Value) bool {
	switch v.Kind() {
	case '"':
		var s string
		return json.Unmarshal(v, &s) == nil && s == hv
	case '0':
		want, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(want, 0) {
			return false
		}
		got, err := strconv.ParseFloat(hv, 64)
		return err == nil && got == want
	case 't':
		return strings.EqualFold(hv, "true")
	case 'f':
		return strings.EqualFold(hv, "false")
	}
	return false
}
