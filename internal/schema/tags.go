package schema

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"
)

// This file extends jsonschema-go's jsonschema struct tag (a description)
// with keyword items. jsonschema-go reserves tags that begin with "WORD=" and
// refuses them; inference runs on a mirror of the type whose keyword tags are
// replaced by markers (see [inspector.mirror]), so that jsonschema-go still
// does all of the inference, and the keywords are then set on the property
// schemas carrying the markers (see [inspector.applyTags]).

// TagGrammar describes the jsonschema struct tag. Registration errors about
// a tag end with it.
const TagGrammar = `a jsonschema tag is a description not beginning with WORD=, or comma-separated KEY=VALUE items with KEY one of ` +
	`title, description, enum, default, example, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, format ` +
	`(enum and example may repeat, one value each); a VALUE containing a comma is written in single quotes, a quote inside doubled: ` +
	`description='Lat, lon',pattern='^[a-z'']+$'; enum, default and example values are read as the property's type: ` +
	`text for strings, JSON for numbers, booleans, arrays and objects`

var tagKeys = []string{"title", "description", "enum", "default", "example", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "format"}

// keywordTag matches the tags jsonschema-go reserves (and refuses): those
// beginning with "WORD=". They are read as keyword items.
var keywordTag = regexp.MustCompile(`^[^ \t\n]*=`)

// tagMarker prefixes the description that stands for a keyword tag in the
// mirror type; the number after it indexes inspector.tags.
const tagMarker = "\x00pmcp-tag "

type tagItem struct{ key, val string }

// fieldTag is a parsed keyword tag.
type fieldTag struct {
	where string // the field, for errors
	raw   string
	items []tagItem
}

func (ft *fieldTag) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: jsonschema tag %q: %s; %s", ft.where, ft.raw, fmt.Sprintf(format, args...), TagGrammar)
}

// parseTag splits a keyword tag into its items.
func parseTag(ft *fieldTag) error {
	seen := map[string]bool{}
	for s := ft.raw; ; {
		s = strings.TrimLeft(s, " ")
		item, _, _ := strings.Cut(s, ",")
		eq := strings.IndexByte(item, '=')
		if eq < 0 {
			return ft.errorf("item %q is not KEY=VALUE", strings.TrimSpace(item))
		}
		key := strings.TrimSpace(item[:eq])
		if !slices.Contains(tagKeys, key) {
			return ft.errorf("unknown key %q", key)
		}
		if seen[key] && key != "enum" && key != "example" {
			return ft.errorf("%s is given twice", key)
		}
		seen[key] = true
		val, rest, more := strings.TrimLeft(s[eq+1:], " "), "", false
		if strings.HasPrefix(val, "'") {
			var err error
			if val, rest, err = unquote(val); err != nil {
				return ft.errorf("%s: %v", key, err)
			}
			if rest, more = strings.CutPrefix(strings.TrimLeft(rest, " "), ","); !more && rest != "" {
				return ft.errorf("%s: text after the closing quote", key)
			}
		} else {
			val, rest, more = strings.Cut(val, ",")
			val = strings.TrimRight(val, " ")
		}
		ft.items = append(ft.items, tagItem{key, val})
		if !more {
			return nil
		}
		s = rest
	}
}

// unquote reads the single-quoted value at the start of s, in which two
// quotes in a row stand for one, and returns it and what follows it.
func unquote(s string) (val, rest string, err error) {
	var b strings.Builder
	for i := 1; ; {
		j := strings.IndexByte(s[i:], '\'')
		if j < 0 {
			return "", "", errors.New("unterminated quoted value")
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if !strings.HasPrefix(s[i:], "'") {
			return b.String(), s[i:], nil
		}
		b.WriteByte('\'')
		i++
	}
}

// readTag records the keyword tag of f, a visible field of struct t, keyed
// by the struct that declares it.
func (in *inspector) readTag(t reflect.Type, f reflect.StructField, where string) error {
	tag, ok := f.Tag.Lookup("jsonschema")
	if !ok || !keywordTag.MatchString(tag) {
		return nil
	}
	decl := t
	for _, i := range f.Index[:len(f.Index)-1] {
		decl = decl.Field(i).Type
		for decl.Kind() == reflect.Pointer {
			decl = decl.Elem()
		}
	}
	key := tagKey{decl, f.Index[len(f.Index)-1]}
	if _, ok := in.marks[key]; ok {
		return nil
	}
	ft := &fieldTag{where: where, raw: tag}
	if err := parseTag(ft); err != nil {
		return err
	}
	if in.marks == nil {
		in.marks = map[tagKey]int{}
	}
	in.marks[key] = len(in.tags)
	in.tags = append(in.tags, ft)
	return nil
}

type tagKey struct {
	t reflect.Type
	i int
}

// mirror returns t, or, if t reaches a struct with keyword tags, a type of
// the same structure in which those tags are markers. Embedded structs on
// the way are mirrored as unnamed structs (reflect.StructOf cannot embed
// named types with methods, nor unexported ones); their fields are
// promoted just the same.
func (in *inspector) mirror(t reflect.Type, busy map[reflect.Type]bool, force bool) (reflect.Type, bool, error) {
	if in.out[t] != nil {
		return t, false, nil
	}
	if m, ok := in.mirrors[t]; ok && !force {
		return m, m != t, nil
	}
	if busy[t] {
		return nil, false, fmt.Errorf("cycle detected for type %v", t)
	}
	busy[t] = true
	defer delete(busy, t)
	m, changed := t, false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		e, ch, err := in.mirror(t.Elem(), busy, force && t.Kind() == reflect.Pointer)
		if err != nil {
			return nil, false, err
		}
		if ch {
			changed = true
			switch t.Kind() {
			case reflect.Pointer:
				m = reflect.PointerTo(e)
			case reflect.Slice:
				m = reflect.SliceOf(e)
			case reflect.Array:
				m = reflect.ArrayOf(t.Len(), e)
			default:
				m = reflect.MapOf(t.Key(), e)
			}
		}
	case reflect.Struct:
		var fields []reflect.StructField
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.Anonymous && !f.IsExported() {
				continue // never a property
			}
			if f.Anonymous && derefKind(f.Type) != reflect.Struct {
				continue // no promoted fields; never a property
			}
			ft, ch, err := in.mirror(f.Type, busy, f.Anonymous)
			if err != nil {
				return nil, false, err
			}
			changed = changed || ch
			sf := reflect.StructField{Name: f.Name, Type: ft, Tag: f.Tag, Anonymous: f.Anonymous}
			if f.Anonymous && !f.IsExported() {
				// jsonschema-go never makes an embedded field a property,
				// so only its (exported) name matters to StructOf.
				sf.Name = "Pmcp_" + f.Name
			}
			if n, ok := in.marks[tagKey{t, i}]; ok {
				changed = true
				js := ""
				if j, ok := f.Tag.Lookup("json"); ok {
					js = "json:" + strconv.Quote(j) + " "
				}
				sf.Tag = reflect.StructTag(js + "jsonschema:" + strconv.Quote(tagMarker+strconv.Itoa(n)))
			}
			fields = append(fields, sf)
		}
		if changed || force {
			var err error
			if m, err = structOf(fields); err != nil {
				return nil, false, fmt.Errorf("%v: %w", t, err)
			}
			changed = true
		}
	}
	if !force {
		if in.mirrors == nil {
			in.mirrors = map[reflect.Type]reflect.Type{}
		}
		in.mirrors[t] = m
	}
	return m, changed, nil
}

func derefKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

// structOf is reflect.StructOf, with its panics (for field sets it does
// not support) as errors.
func structOf(fields []reflect.StructField) (t reflect.Type, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("keyword tags are not supported in this struct (%v); describe the type with ForOptions.TypeSchemas", r)
		}
	}()
	return reflect.StructOf(fields), nil
}

// applyTags replaces the markers in the schema inferred for a mirror type
// by the keywords of their tags.
func (in *inspector) applyTags(s *jsonschema.Schema) error {
	if s == nil {
		return nil
	}
	if n, ok := strings.CutPrefix(s.Description, tagMarker); ok {
		i, _ := strconv.Atoi(n)
		s.Description = ""
		if err := applyTag(in.tags[i], s); err != nil {
			return err
		}
	}
	for _, p := range s.Properties {
		if err := in.applyTags(p); err != nil {
			return err
		}
	}
	if err := in.applyTags(s.Items); err != nil {
		return err
	}
	return in.applyTags(s.AdditionalProperties)
}

// applyTag sets the keywords of ft on the property schema s, checking each
// value against the property's type.
func applyTag(ft *fieldTag, s *jsonschema.Schema) error {
	jtype, nullable := "", false
	if s.Type != "" {
		jtype = s.Type
	} else {
		var others []string
		for _, t := range s.Types {
			if t == "null" {
				nullable = true
			} else {
				others = append(others, t)
			}
		}
		if len(others) == 1 {
			jtype = others[0]
		}
	}
	typeName := jtype
	if typeName == "" {
		typeName = "unconstrained"
	}
	// Constraints first, then the values, which must satisfy them.
	for _, it := range ft.items {
		switch it.key {
		case "title":
			s.Title = it.val
		case "description":
			s.Description = it.val
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if jtype != "integer" && jtype != "number" {
				return ft.errorf("%s applies to integer or number properties, not %s", it.key, typeName)
			}
			var f float64
			if it.val == "" || it.val[0] == '"' || json.Unmarshal([]byte(it.val), &f) != nil {
				return ft.errorf("%s: %q is not a number", it.key, it.val)
			}
			switch it.key {
			case "minimum":
				// The tag narrows what the Go type accepts, never widens it.
				if s.Minimum == nil || f > *s.Minimum {
					s.Minimum = &f
				}
			case "maximum":
				if s.Maximum == nil || f < *s.Maximum {
					s.Maximum = &f
				}
			case "exclusiveMinimum":
				s.ExclusiveMinimum = &f
			default:
				s.ExclusiveMaximum = &f
			}
		case "minLength", "maxLength", "pattern", "format":
			if jtype != "string" {
				return ft.errorf("%s applies to string properties, not %s", it.key, typeName)
			}
			switch it.key {
			case "minLength", "maxLength":
				n, err := strconv.Atoi(it.val)
				if err != nil || n < 0 {
					return ft.errorf("%s: %q is not a non-negative integer", it.key, it.val)
				}
				if it.key == "minLength" {
					s.MinLength = &n
				} else {
					s.MaxLength = &n
				}
			case "pattern":
				if _, err := regexp.Compile(it.val); err != nil {
					return ft.errorf("pattern: %q is not a valid regular expression: %v", it.val, err)
				}
				s.Pattern = it.val
			default:
				if it.val == "" {
					return ft.errorf("format: empty value")
				}
				s.Format = it.val
			}
		}
	}
	for _, pass := range []string{"enum", "default"} {
		var enum []any
		for _, it := range ft.items {
			if it.key != pass && (pass == "enum" || it.key != "example") {
				continue
			}
			v, err := tagValue(jtype, it.val)
			if err != nil {
				return ft.errorf("%s: %v", it.key, err)
			}
			if err := fits(s, v); err != nil {
				shown := it.val
				if jtype == "string" {
					shown = strconv.Quote(it.val)
				}
				return ft.errorf("%s: %s does not fit the property: %v", it.key, shown, err)
			}
			switch it.key {
			case "enum":
				enum = append(enum, v)
			case "example":
				s.Examples = append(s.Examples, v)
			default:
				b, err := json.Marshal(v)
				if err != nil {
					return ft.errorf("default: %v", err)
				}
				s.Default = b
			}
		}
		if enum != nil {
			if nullable {
				enum = append(enum, nil) // a pointer field still accepts null
			}
			s.Enum = enum
		}
	}
	return nil
}

// tagValue reads an enum, default or example value as JSON type jtype.
func tagValue(jtype, val string) (any, error) {
	switch jtype {
	case "string":
		return val, nil
	case "boolean":
		switch val {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a boolean", val)
	case "integer", "number":
		var f float64
		if val == "" || val[0] == '"' || json.Unmarshal([]byte(val), &f) != nil || jtype == "integer" && f != math.Trunc(f) {
			if jtype == "integer" {
				return nil, fmt.Errorf("%q is not an integer", val)
			}
			return nil, fmt.Errorf("%q is not a number", val)
		}
		return f, nil
	}
	var v any
	if err := json.Unmarshal([]byte(val), &v); err != nil {
		return nil, fmt.Errorf("%q is not JSON", val)
	}
	return v, nil
}

// fits validates v against the property schema s.
func fits(s *jsonschema.Schema, v any) error {
	r, err := s.CloneSchemas().Resolve(nil)
	if err != nil {
		return err
	}
	return r.Validate(v)
}
