package pmcp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the client side of the 2026-07-28 header mirroring
// (SEP-2243): which headers a modern request carries, how values are
// encoded, and which x-mcp-header annotations are valid.

// paramBinding is one valid x-mcp-header annotation of a tool, as the
// client sees it: the argument at path goes into the header key.
type paramBinding struct {
	path []string
	key  string // "Mcp-Param-" + the annotated name, as annotated
}

// errInvalidHeaderAnnotation marks a tool whose x-mcp-header annotations
// break the rules; HTTP clients drop such tools from tools/list.
var errInvalidHeaderAnnotation = errors.New("invalid x-mcp-header annotation")

// annotationKey is the JSON Schema extension keyword of SEP-2243.
const annotationKey = "x-mcp-header"

// clientParamBindings validates the x-mcp-header annotations of a tool's
// input schema and returns the bindings they define. The rules:
// annotations sit only on properties reached through "properties" chains
// from the root (never on the root, nor under items, a composition or
// conditional keyword, $defs or anything else); the property's type is
// exactly "string", "integer" or "boolean"; the name is a non-empty HTTP
// token, unique case-insensitively within the tool. A schema that is not
// an object (a boolean schema, say) has no bindings.
func clientParamBindings(schema jsontext.Value) ([]paramBinding, error) {
	if len(schema) == 0 || schema.Kind() != '{' {
		return nil, nil
	}
	w := &bindingWalker{seen: map[string]string{}}
	if err := w.walk(schema, nil); err != nil {
		return nil, err
	}
	return w.out, nil
}

type bindingWalker struct {
	seen map[string]string // lower-cased name -> property path
	out  []paramBinding
}

func (w *bindingWalker) walk(raw jsontext.Value, path []string) error {
	var node map[string]jsontext.Value
	if raw.Kind() != '{' || json.Unmarshal(raw, &node) != nil {
		return nil
	}
	where := strings.Join(path, ".")
	if ann, ok := node[annotationKey]; ok {
		if len(path) == 0 {
			return fmt.Errorf("%w: on the schema root", errInvalidHeaderAnnotation)
		}
		var name string
		if ann.Kind() != '"' || json.Unmarshal(ann, &name) != nil || name == "" {
			return fmt.Errorf("%w: property %q: the header name must be a non-empty string", errInvalidHeaderAnnotation, where)
		}
		if !httpToken(name) {
			return fmt.Errorf("%w: property %q: %q is not an HTTP token", errInvalidHeaderAnnotation, where, name)
		}
		var typ string
		if t := node["type"]; t.Kind() != '"' || json.Unmarshal(t, &typ) != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
			return fmt.Errorf("%w: property %q: the type must be string, integer or boolean", errInvalidHeaderAnnotation, where)
		}
		lower := strings.ToLower(name)
		if other, dup := w.seen[lower]; dup {
			return fmt.Errorf("%w: properties %q and %q share the header name %q", errInvalidHeaderAnnotation, other, where, name)
		}
		w.seen[lower] = where
		w.out = append(w.out, paramBinding{path: path, key: headerParamPrefix + name})
	}
	for k, v := range node {
		switch k {
		case annotationKey:
		case "properties":
			var props map[string]jsontext.Value
			if v.Kind() != '{' || json.Unmarshal(v, &props) != nil {
				continue
			}
			for name, sub := range props {
				p := make([]string, len(path)+1)
				copy(p, path)
				p[len(path)] = name
				if err := w.walk(sub, p); err != nil {
					return err
				}
			}
		default:
			if hasNestedAnnotation(k, v) {
				return fmt.Errorf("%w: %q under %s: annotations are only allowed on properties reached through \"properties\"", errInvalidHeaderAnnotation, where, k)
			}
		}
	}
	return nil
}

// hasNestedAnnotation reports whether the value of schema keyword k
// contains a subschema carrying x-mcp-header. Keywords whose values are
// data (enum, const, default, examples) are not looked into, nor
// property-name maps' keys.
func hasNestedAnnotation(k string, v jsontext.Value) bool {
	switch k {
	case "enum", "const", "default", "examples", "required", "type", "description", "title", "$comment":
		return false
	}
	switch v.Kind() {
	case '{':
		var m map[string]jsontext.Value
		if json.Unmarshal(v, &m) != nil {
			return false
		}
		switch k {
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			// maps of name -> schema
			for _, sub := range m {
				if schemaHasAnnotation(sub) {
					return true
				}
			}
			return false
		}
		return schemaHasAnnotation(v)
	case '[':
		var arr []jsontext.Value
		if json.Unmarshal(v, &arr) != nil {
			return false
		}
		for _, sub := range arr {
			if schemaHasAnnotation(sub) {
				return true
			}
		}
	}
	return false
}

// schemaHasAnnotation reports whether the schema raw, or any subschema of
// it, carries x-mcp-header.
func schemaHasAnnotation(raw jsontext.Value) bool {
	var node map[string]jsontext.Value
	if raw.Kind() != '{' || json.Unmarshal(raw, &node) != nil {
		return false
	}
	if _, ok := node[annotationKey]; ok {
		return true
	}
	for k, v := range node {
		if hasNestedAnnotation(k, v) {
			return true
		}
	}
	return false
}

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

// modernRequestPeek is what the HTTP transport reads from a request's
// params to derive its headers.
type modernRequestPeek struct {
	Meta      map[string]jsontext.Value `json:"_meta"`
	Name      jsontext.Value            `json:"name"`
	URI       jsontext.Value            `json:"uri"`
	Arguments jsontext.Value            `json:"arguments"`
}

// mirroredHeaders returns the SEP-2243 headers of a request when it is a
// modern one (its _meta carries a protocol version), and that version.
// bindings looks up the x-mcp-header bindings of a tool by name.
func mirroredHeaders(method string, params jsontext.Value, bindings func(tool string) []paramBinding) (http.Header, string, bool) {
	if params.Kind() != '{' {
		return nil, "", false
	}
	var p modernRequestPeek
	if json.Unmarshal(params, &p) != nil {
		return nil, "", false
	}
	var version string
	if v := p.Meta[MetaProtocolVersion]; v.Kind() != '"' || json.Unmarshal(v, &version) != nil || version == "" {
		return nil, "", false
	}
	h := http.Header{}
	h[headerProtocolVersion] = []string{version}
	h[headerMethod] = []string{method}
	var nameRaw jsontext.Value
	switch method {
	case MethodToolsCall, MethodPromptsGet:
		nameRaw = p.Name
	case MethodResourcesRead:
		nameRaw = p.URI
	}
	var name string
	if nameRaw.Kind() == '"' && json.Unmarshal(nameRaw, &name) == nil {
		h[headerName] = []string{encodeHeaderText(name)}
	}
	if method == MethodToolsCall && name != "" && bindings != nil {
		if bs := bindings(name); len(bs) > 0 {
			var args map[string]jsontext.Value
			if p.Arguments.Kind() == '{' && json.Unmarshal(p.Arguments, &args) == nil {
				for _, b := range bs {
					if v, ok := argAt(args, b.path); ok {
						if hv, ok := argHeaderValue(v); ok {
							h[b.key] = []string{hv}
						}
					}
				}
			}
		}
	}
	return h, version, true
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
		bs, err := clientParamBindings(tp.InputSchema)
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

// httpToken reports whether s is an RFC 9110 token (1*tchar).
func httpToken(s string) bool {
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

// argAt returns the argument at path in the arguments object top.
func argAt(top map[string]jsontext.Value, path []string) (jsontext.Value, bool) {
	if len(path) == 0 {
		return nil, false
	}
	cur, ok := top[path[0]]
	for _, k := range path[1:] {
		if !ok || cur.Kind() != '{' {
			return nil, false
		}
		var m map[string]jsontext.Value
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		cur, ok = m[k]
	}
	return cur, ok
}
