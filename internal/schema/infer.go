package schema

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// ForOptions configure [For].
type ForOptions struct {
	// Label names the validated value in error messages, for example
	// "arguments" or "structuredContent". Default "value".
	Label string
	// TypeSchemas gives the schemas of specific Go types, overriding
	// inference (and the built-in overrides listed in the package
	// documentation). Use it for types with custom JSON methods.
	TypeSchemas map[reflect.Type]*jsonschema.Schema
	// Limits bound the resources used by validation.
	Limits Limits
}

// For infers the JSON Schema of T, which must describe a JSON object (a
// struct, a map with string keys, an interface type such as any, or a pointer
// to one of these), and compiles it. See the package documentation for the
// rules. Call it once per type and keep the result: inference uses
// reflection and is comparatively slow.
func For[T any](opts ForOptions) (*Compiled, error) {
	return ForType(reflect.TypeFor[T](), opts)
}

// ForType is like [For] but takes a reflect.Type.
func ForType(t reflect.Type, opts ForOptions) (*Compiled, error) {
	if t == nil {
		return nil, errors.New("schema: nil type")
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	in := &inspector{
		user: opts.TypeSchemas,
		out:  maps.Clone(builtinTypeSchemas),
		seen: map[reflect.Type]bool{},
	}
	maps.Copy(in.out, opts.TypeSchemas)
	if err := in.walk(t, t.String()); err != nil {
		return nil, fmt.Errorf("schema: inferring the schema of %v: %w", t, err)
	}
	it := t
	if len(in.tags) > 0 {
		m, _, err := in.mirror(t, map[reflect.Type]bool{}, false)
		if err != nil {
			return nil, fmt.Errorf("schema: inferring the schema of %v: %w", t, err)
		}
		it = m
	}
	s, err := jsonschema.ForType(it, &jsonschema.ForOptions{TypeSchemas: in.out})
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if err := in.applyTags(s); err != nil {
		return nil, fmt.Errorf("schema: inferring the schema of %v: %w", t, err)
	}
	// The root must be an object.
	switch {
	case t.Kind() == reflect.Interface && s.Type == "" && s.Types == nil:
		s.Type = "object" // any: an object, otherwise unconstrained
	case s.Type == "object" && t.Kind() == reflect.Struct && len(s.Properties) == 0:
		// struct{}: accept any object, as for a tool without parameters.
		s.AdditionalProperties = nil
		s.Properties = nil
	case s.Type == "object":
	default:
		return nil, fmt.Errorf(`schema: %v cannot describe a tool's arguments or structured result: the schema root must have type "object", but %v is %s`, t, t, typeList(jsonTypes(s)))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema: marshaling the schema of %v: %w", t, err)
	}
	return Compile(raw, CompileOptions{Label: opts.Label, Limits: opts.Limits})
}

func jsonTypes(s *jsonschema.Schema) any {
	if s.Type != "" {
		return s.Type
	}
	var a []any
	for _, t := range s.Types {
		a = append(a, t)
	}
	return a
}

// builtinTypeSchemas override jsonschema-go's inference for types whose JSON
// representation under github.com/go-json-experiment/json differs from their
// Go structure.
var builtinTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[time.Time]():          {Type: "string", Format: "date-time"},
	reflect.TypeFor[[]byte]():             {Type: "string", ContentEncoding: "base64"},
	reflect.TypeFor[stdjson.RawMessage](): {},
	reflect.TypeFor[jsontext.Value]():     {},
	reflect.TypeFor[big.Int]():            {Type: "integer"}, // marshals as a JSON number
	// jsonschema-go's own overrides; listed so that the method checks below
	// accept them.
	reflect.TypeFor[slog.Level](): {Type: "string"},
	reflect.TypeFor[big.Rat]():    {Type: "string"},
	reflect.TypeFor[big.Float]():  {Type: "string"},
}

// inspector walks a Go type before inference, to catch the cases where
// jsonschema-go's inference (which follows encoding/json v1 conventions) would
// describe something other than what github.com/go-json-experiment/json (which
// the SDK uses to decode arguments and encode results) reads and writes.
type inspector struct {
	user map[reflect.Type]*jsonschema.Schema
	out  map[reflect.Type]*jsonschema.Schema
	seen map[reflect.Type]bool
	// Keyword tags (see tags.go): the parsed tags, the index of each by
	// declaring struct and field, and the mirror types built so far.
	tags    []*fieldTag
	marks   map[tagKey]int
	mirrors map[reflect.Type]reflect.Type
}

var durationType = reflect.TypeFor[time.Duration]()

func (in *inspector) walk(t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if in.seen[t] || in.out[t] != nil {
		return nil
	}
	in.seen[t] = true
	if t == durationType {
		return fmt.Errorf("%s: time.Duration has no default JSON representation in json v2; use a string or an integer field, or describe it with ForOptions.TypeSchemas", where)
	}
	if t.Kind() != reflect.Interface {
		if m := customMethod(t, "MarshalJSON", "UnmarshalJSON", "MarshalJSONTo", "UnmarshalJSONFrom"); m != "" {
			return fmt.Errorf("%s: type %v has a %s method, so its JSON form cannot be inferred; describe it with ForOptions.TypeSchemas", where, t, m)
		}
		if customMethod(t, "MarshalText", "UnmarshalText", "AppendText") != "" {
			in.out[t] = &jsonschema.Schema{Type: "string"}
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && customMethod(t.Elem(), "MarshalJSON", "MarshalText", "MarshalJSONTo", "AppendText") == "" {
			// json v2 encodes byte slices and arrays as base64 strings.
			in.out[t] = &jsonschema.Schema{Type: "string", ContentEncoding: "base64"}
			return nil
		}
		return in.walk(t.Elem(), where+"[]")
	case reflect.Map:
		return in.walk(t.Elem(), where+"[]")
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			name, opts, hasOpts := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" && !hasOpts {
				continue
			}
			fwhere := where + "." + f.Name
			if f.Anonymous {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if in.out[ft] != nil {
					continue // jsonschema-go handles overridden embedded structs
				}
				if name != "" || opts != "" {
					return fmt.Errorf("%s: embedded field with a json tag is not supported by schema inference; use a named field", fwhere)
				}
				if ft.Kind() != reflect.Struct {
					if !f.IsExported() {
						continue
					}
					return fmt.Errorf("%s: embedded field of non-struct type %v is not supported by schema inference; use a named field", fwhere, ft)
				}
				if m := customMethod(ft, "MarshalJSON", "UnmarshalJSON", "MarshalJSONTo", "UnmarshalJSONFrom", "MarshalText", "UnmarshalText"); m != "" {
					return fmt.Errorf("%s: embedded type %v has a %s method, which is not supported by schema inference; use a named field", fwhere, ft, m)
				}
				continue // its fields are visited as promoted fields
			}
			if !f.IsExported() {
				continue
			}
			if strings.ContainsAny(name, "'\"\\`") {
				return fmt.Errorf("%s: quoted JSON names are not supported by schema inference", fwhere)
			}
			if hasOpts {
				for opt := range strings.SplitSeq(opts, ",") {
					switch {
					case opt == "":
						return fmt.Errorf("%s: malformed json tag %q (json v2 rejects empty options)", fwhere, f.Tag.Get("json"))
					case opt == "string", opt == "embed", strings.HasPrefix(opt, "format"):
						return fmt.Errorf("%s: json tag option %q is not supported by schema inference (it changes the JSON representation); describe the type with ForOptions.TypeSchemas or use a raw schema", fwhere, opt)
					}
					// omitempty, omitzero and case:... are understood;
					// json v2 ignores unknown options, and so do we.
				}
			}
			if err := in.readTag(t, f, fwhere); err != nil {
				return err
			}
			if err := in.walk(f.Type, fwhere); err != nil {
				return err
			}
		}
	}
	return nil
}

// customMethod returns the first of the named methods that t or *t has.
func customMethod(t reflect.Type, names ...string) string {
	pt := reflect.PointerTo(t)
	for _, name := range names {
		if _, ok := t.MethodByName(name); ok {
			return name
		}
		if _, ok := pt.MethodByName(name); ok {
			return name
		}
	}
	return ""
}
