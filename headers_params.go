package pmcp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the x-mcp-header rules of the 2026-07-28 header
// mirroring (SEP-2243), shared by both sides: the server validates a
// tool's annotations when the tool is registered (and refuses invalid
// ones), the client when it reads tools/list (and drops invalid tools).

// annotationKey is the JSON Schema extension keyword of SEP-2243.
const annotationKey = "x-mcp-header"

// errInvalidHeaderAnnotation marks a tool whose x-mcp-header annotations
// break the rules: servers refuse to register it, HTTP clients drop it
// from tools/list.
var errInvalidHeaderAnnotation = errors.New("invalid x-mcp-header annotation")

// paramBinding is one valid x-mcp-header annotation of a tool's input
// schema: the argument at path is mirrored into the header
// Mcp-Param-<name>.
type paramBinding struct {
	name   string   // the annotated header name
	path   []string // property names from the schema root
	typ    string   // "string", "integer" or "boolean"
	key    string   // "Mcp-Param-" + name, as annotated (what the client sends)
	header string   // canonical MIME form of key (what the server looks up)
}

// paramBindingsOf validates the x-mcp-header annotations of a tool's
// input schema and returns the bindings they define. The rules:
// annotations sit only on properties reached through "properties" chains
// from the root (never on the root, nor under items, a composition or
// conditional keyword, $defs or anything else); the property's type is
// exactly "string", "integer" or "boolean"; the name is a non-empty HTTP
// token, unique case-insensitively within the tool. A schema that is not
// an object (a boolean schema, say) has no bindings. Errors wrap
// errInvalidHeaderAnnotation.
func paramBindingsOf(schema jsontext.Value) ([]paramBinding, error) {
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
		if !isToken(name) {
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
		key := headerParamPrefix + name
		w.out = append(w.out, paramBinding{
			name:   name,
			path:   path,
			typ:    typ,
			key:    key,
			header: http.CanonicalHeaderKey(key),
		})
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

// isToken reports whether s is an RFC 9110 token (1*tchar).
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

// argAt returns the argument at path in the arguments object top, and
// whether it is present.
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
