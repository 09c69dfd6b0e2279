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

// headerValue returns a request header with optional whitespace trimmed,
// and whether it was present at all.
func headerValue(h http.Header, key string) (string, bool) {
	v, ok := h[key]
	if !ok || len(v) == 0 {
		return "", false
	}
	return strings.Trim(v[0], " \t"), true
}

// headerRepeated reports whether a request header came on more than one
// field line. The recipient combines such lines into one comma-separated
// value (RFC 9110 §5.3), which can never equal the single value mirrored
// from the body, even when every line repeats it: a repeated mirrored
// header is a mismatch, never "the first one wins".
func headerRepeated(h http.Header, key string) bool { return len(h[key]) > 1 }

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

// peekedRequest is what the transport learnt from one request's params.
type peekedRequest struct {
	version    string // _meta protocolVersion when it is a string
	hasVersion bool
	name       jsontext.Value // the target (params.name, uri or taskId), raw
	// nameStr is name decoded when nameIsStr: a tool or prompt name or a
	// resource URI that is a string, as the params scan decoded it.
	nameStr     string
	nameIsStr   bool
	row         *methodRow // the method's row, nil when it has none
	paramsParse bool       // params were an object and parsed
}

func present(v jsontext.Value) bool { return len(v) > 0 && v.Kind() != 'n' }

// checkStandardHeaders validates MCP-Protocol-Version, Mcp-Method and
// Mcp-Name of a modern request against its body (SEP-2243).
func checkStandardHeaders(h http.Header, method string, pk *peekedRequest) error {
	for _, k := range [...]string{headerProtocolVersion, headerMethod, headerName} {
		if headerRepeated(h, k) {
			return mismatch("%s header sent more than once", k)
		}
	}
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
	if pk.row == nil || pk.row.flags&mirrorName == 0 {
		return nil
	}
	hv, hasHeader := headerValue(h, headerName)
	body, hasBody := pk.nameStr, pk.nameIsStr
	if !hasBody && pk.name.Kind() == '"' { // a task id: not decoded by the scan
		hasBody = json.Unmarshal(pk.name, &body) == nil
	}
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
func checkParamHeaders(h http.Header, bindings []paramBinding, args jsontext.Value) error {
	var top map[string]jsontext.Value
	if args.Kind() == '{' {
		if json.Unmarshal(args, &top) != nil {
			top = nil
		}
	}
	for _, b := range bindings {
		if headerRepeated(h, b.header) {
			return mismatch("%s header sent more than once", b.header)
		}
		hv, hasHeader := headerValue(h, b.header)
		val, found := argAt(top, b.path)
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
