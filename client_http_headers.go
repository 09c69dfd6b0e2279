package pmcp

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the client side of the 2026-07-28 header mirroring
// (SEP-2243): which headers a modern request carries, how values are
// encoded, and how tools with invalid x-mcp-header annotations are
// dropped (the rules themselves are in headers_params.go).

// headerSafe reports whether s can travel as a header value as it is:
// printable ASCII only (internal spaces allowed), no leading or trailing
// whitespace, and not looking like the Base64 sentinel itself.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	if s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return false
	}
	return !(strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix))
}

// encodeHeaderText returns s as a header value: as it is when header-safe,
// else =?base64?<standard Base64 of its UTF-8>?=.
func encodeHeaderText(s string) string {
	if headerSafe(s) {
		return s
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix
}

// argHeaderValue renders one argument for its Mcp-Param header: strings
// encoded as by encodeHeaderText, numbers as their JSON text, booleans as
// true/false. Null, absent and structured values give no header.
func argHeaderValue(v jsontext.Value) (string, bool) {
	switch v.Kind() {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return encodeHeaderText(s), true
	case '0':
		return string(v), true
	case 't':
		return "true", true
	case 'f':
		return "false", true
	}
	return "", false
}

// knownVersion returns the version whose quoted form is q without
// allocating, or "" when q is not one of the versions the SDK knows.
func knownVersion(q jsontext.Value) string {
	for _, vs := range [][]string{modernVersions, legacyVersions} {
		for _, v := range vs {
			if len(q) == len(v)+2 && string(q[1:len(q)-1]) == v {
				return v
			}
		}
	}
	return ""
}

// mirroredHeaders returns the SEP-2243 headers of a request when it is a
// modern one (its _meta carries a protocol version), and that version.
// bindings looks up the x-mcp-header bindings of a tool by name.
func mirroredHeaders(method string, params jsontext.Value, bindings func(tool string) []paramBinding) (http.Header, string, bool) {
	if params.Kind() != '{' {
		return nil, "", false
	}
	// The server's one scan of a request's params (server_params.go): the
	// same reading of _meta and the target on both sides of the wire.
	var rp reqParams
	rp.scan(params)
	if !rp.ok || !rp.metaOK {
		return nil, "", false
	}
	version := metaVersion(rp.version)
	if version == "" {
		return nil, "", false
	}
	row := methodOf(method)
	var nameRaw jsontext.Value
	var name string
	if row != nil && row.flags&mirrorName != 0 {
		nameRaw, name = rp.target(row)
		if name == "" && nameRaw.Kind() == '"' {
			name, _ = stringValue(nameRaw)
		}
	}
	return mirrored(method, row, version, nameRaw.Kind() == '"', name, rp.call.Arguments, bindings), version, true
}

// metaVersion is the header value of a request's raw _meta protocolVersion
// v: "" when it is not a non-empty string (no mirrored headers then).
func metaVersion(v jsontext.Value) string {
	if v.Kind() != '"' {
		return ""
	}
	version := knownVersion(v)
	if version == "" {
		version, _ = stringValue(v)
	}
	return version
}

// ownHeaders returns the SEP-2243 headers of a request whose params the
// client encoded itself (op), from what it encoded them of rather than
// by reading them back: the headers mirroredHeaders would find.
func ownHeaders(method string, op *ownParams, bindings func(tool string) []paramBinding) (http.Header, bool) {
	if op.version == "" {
		return nil, false
	}
	return mirrored(method, methodOf(method), op.version, true, op.name, op.args, bindings), true
}

// mirrored builds the SEP-2243 headers of a modern request of method (its
// row) and version: Mcp-Name when the method mirrors its target and the
// params name it with a string (hasName: name), Mcp-Param-* from args by
// the tool's x-mcp-header bindings.
func mirrored(method string, row *methodRow, version string, hasName bool, name string, args jsontext.Value, bindings func(tool string) []paramBinding) http.Header {
	h := make(http.Header, 3)
	h[headerProtocolVersion] = []string{version}
	h[headerMethod] = []string{method}
	if row == nil || row.flags&mirrorName == 0 {
		return h
	}
	if hasName {
		h[headerName] = []string{encodeHeaderText(name)}
	}
	if row.flags&mirrorParams != 0 && name != "" && bindings != nil {
		if bs := bindings(name); len(bs) > 0 {
			var argm map[string]jsontext.Value
			if args.Kind() == '{' && json.Unmarshal(args, &argm) == nil {
				for _, b := range bs {
					if v, ok := argAt(argm, b.path); ok {
						if hv, ok := argHeaderValue(v); ok {
							h[b.key] = []string{hv}
						}
					}
				}
			}
		}
	}
	return h
}

// toolsPage is a tools/list result split into its tools (raw) and the
// other members.
type toolsPage struct {
	Tools []jsontext.Value `json:"tools"`
}

type toolPeek struct {
	Name        string         `json:"name"`
	InputSchema jsontext.Value `json:"inputSchema"`
}

// filterTools drops the tools with invalid x-mcp-header annotations from
// a tools/list result and returns the (possibly rewritten) result, the
// bindings of the tools kept, and the names and reasons of those dropped.
// A result it cannot read is returned unchanged.
func filterTools(result jsontext.Value) (jsontext.Value, map[string][]paramBinding, []string) {
	var page toolsPage
	if result.Kind() != '{' || json.Unmarshal(result, &page) != nil {
		return result, nil, nil
	}
	keep := make([]jsontext.Value, 0, len(page.Tools))
	bindings := map[string][]paramBinding{}
	var dropped []string
	for _, raw := range page.Tools {
		var tp toolPeek
		if json.Unmarshal(raw, &tp) != nil {
			keep = append(keep, raw) // the session reports malformed tools
			continue
		}
		bs, err := paramBindingsOf(tp.InputSchema)
		if err != nil {
			dropped = append(dropped, capPeerString(tp.Name)+": "+capPeerString(err.Error()))
			continue
		}
		if len(bs) > 0 {
			bindings[tp.Name] = bs
		}
		keep = append(keep, raw)
	}
	if len(dropped) == 0 {
		return result, bindings, nil
	}
	var members map[string]jsontext.Value
	if json.Unmarshal(result, &members) != nil {
		return result, bindings, dropped
	}
	tools, err := json.Marshal(keep)
	if err != nil {
		return result, bindings, dropped
	}
	members["tools"] = tools
	out, err := json.Marshal(members, json.Deterministic(true))
	if err != nil {
		return result, bindings, dropped
	}
	return out, bindings, dropped
}
