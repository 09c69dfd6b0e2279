package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// formField is one property of an elicitation's requested schema (a flat
// object of primitives), in the order the server wrote them.
type formField struct {
	name        string
	typ         string // string, number, integer, boolean, array (multi-select)
	title       string
	description string
	required    bool
	format      string
	// choices of an enum (single-select; for an array, its items); labels
	// are their titles where the schema gives them.
	choices []string
	labels  []string
	def     any // nil: no default
	min     *float64
	max     *float64
	minLen  *int
	maxLen  *int
}

// schemaProp is the JSON shape of a property, as far as the CLI reads it.
type schemaProp struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Format      string   `json:"format"`
	Enum        []string `json:"enum"`
	EnumNames   []string `json:"enumNames"`
	OneOf       []constT `json:"oneOf"`
	AnyOf       []constT `json:"anyOf"`
	Items       *struct {
		Enum  []string `json:"enum"`
		AnyOf []constT `json:"anyOf"`
		OneOf []constT `json:"oneOf"`
	} `json:"items"`
	Default   jsontext.Value `json:"default"`
	Minimum   *float64       `json:"minimum"`
	Maximum   *float64       `json:"maximum"`
	MinLength *int           `json:"minLength"`
	MaxLength *int           `json:"maxLength"`
}

type constT struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// parseForm reads a requested schema into its fields, keeping the
// server's property order (the order a person is asked in).
func parseForm(schema jsontext.Value) ([]*formField, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var top struct {
		Properties jsontext.Value `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	req := map[string]bool{}
	for _, r := range top.Required {
		req[r] = true
	}
	if len(top.Properties) == 0 {
		return nil, nil
	}
	dec := jsontext.NewDecoder(strings.NewReader(string(top.Properties)))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, errors.New("requested schema: properties is not an object")
	}
	var fields []*formField
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("requested schema: %w", err)
		}
		name := tok.String()
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("requested schema: %w", err)
		}
		var p schemaProp
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("requested schema: property %q: %w", name, err)
		}
		f := &formField{name: name, typ: p.Type, title: p.Title, description: p.Description, required: req[name],
			format: p.Format, min: p.Minimum, max: p.Maximum, minLen: p.MinLength, maxLen: p.MaxLength}
		switch {
		case len(p.Enum) > 0:
			f.choices = p.Enum
			if len(p.EnumNames) == len(p.Enum) {
				f.labels = p.EnumNames
			}
		case len(p.OneOf) > 0:
			f.choices, f.labels = consts(p.OneOf)
		case len(p.AnyOf) > 0:
			f.choices, f.labels = consts(p.AnyOf)
		case p.Items != nil && len(p.Items.Enum) > 0:
			f.choices = p.Items.Enum
		case p.Items != nil && len(p.Items.AnyOf) > 0:
			f.choices, f.labels = consts(p.Items.AnyOf)
		case p.Items != nil && len(p.Items.OneOf) > 0:
			f.choices, f.labels = consts(p.Items.OneOf)
		}
		switch f.typ {
		case "string", "number", "integer", "boolean":
		case "array":
			if len(f.choices) == 0 {
				return nil, fmt.Errorf("requested schema: property %q: an array without enumerated items", name)
			}
		default:
			return nil, fmt.Errorf("requested schema: property %q has unsupported type %q", name, f.typ)
		}
		if len(p.Default) > 0 {
			var d any
			if err := json.Unmarshal(p.Default, &d); err == nil {
				if d, err = f.check(d); err == nil {
					f.def = d
				}
			}
		}
		fields = append(fields, f)
	}
	return fields, nil
}

func consts(cs []constT) (vals, labels []string) {
	for _, c := range cs {
		vals = append(vals, c.Const)
		labels = append(labels, c.Title)
	}
	return vals, labels
}

// label is how a field is named in a prompt.
func (f *formField) label() string {
	s := f.name
	if f.title != "" && f.title != f.name {
		s = f.title + " (" + f.name + ")"
	}
	return sanitize(s)
}

// check validates (and normalises: JSON numbers decode as float64) a
// value of the field.
func (f *formField) check(v any) (any, error) {
	switch f.typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s: want a string", f.name)
		}
		if len(f.choices) > 0 && !contains(f.choices, s) {
			return nil, fmt.Errorf("%s: %q is not one of %s", f.name, s, strings.Join(f.choices, ", "))
		}
		n := len([]rune(s))
		if f.minLen != nil && n < *f.minLen {
			return nil, fmt.Errorf("%s: at least %d characters", f.name, *f.minLen)
		}
		if f.maxLen != nil && n > *f.maxLen {
			return nil, fmt.Errorf("%s: at most %d characters", f.name, *f.maxLen)
		}
		return s, nil
	case "number", "integer":
		x, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("%s: want a number", f.name)
		}
		if f.typ == "integer" && (x != math.Trunc(x) || math.IsInf(x, 0)) {
			return nil, fmt.Errorf("%s: want an integer", f.name)
		}
		if f.min != nil && x < *f.min {
			return nil, fmt.Errorf("%s: at least %g", f.name, *f.min)
		}
		if f.max != nil && x > *f.max {
			return nil, fmt.Errorf("%s: at most %g", f.name, *f.max)
		}
		if f.typ == "integer" {
			return int64(x), nil
		}
		return x, nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("%s: want true or false", f.name)
		}
		return b, nil
	case "array":
		xs, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an array", f.name)
		}
		out := make([]any, 0, len(xs))
		for _, x := range xs {
			s, ok := x.(string)
			if !ok || !contains(f.choices, s) {
				return nil, fmt.Errorf("%s: %v is not one of %s", f.name, x, strings.Join(f.choices, ", "))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: unsupported type %q", f.name, f.typ)
}

// parseInput reads what a person typed for the field (not empty).
func (f *formField) parseInput(s string) (any, error) {
	switch {
	case f.typ == "array":
		var out []any
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
			v, err := f.pick(part)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return f.check(out)
	case len(f.choices) > 0:
		v, err := f.pick(s)
		if err != nil {
			return nil, err
		}
		return f.check(v)
	case f.typ == "string":
		return f.check(s)
	case f.typ == "number", f.typ == "integer":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", f.name, s)
		}
		return f.check(x)
	case f.typ == "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true", "1":
			return true, nil
		case "n", "no", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("%s: answer y or n", f.name)
	}
	return nil, fmt.Errorf("%s: unsupported type %q", f.name, f.typ)
}

// pick takes a choice by its number (1-based) or its value.
func (f *formField) pick(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.choices) {
		return f.choices[n-1], nil
	}
	if contains(f.choices, s) {
		return s, nil
	}
	return "", fmt.Errorf("%s: choose a number from 1 to %d", f.name, len(f.choices))
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// validateContent checks a whole answer (--elicit-json) against the form:
// required fields present, each value of its field's type, no field the
// form does not ask for.
func validateContent(fields []*formField, content map[string]any) (map[string]any, error) {
	byName := map[string]*formField{}
	for _, f := range fields {
		byName[f.name] = f
	}
	out := map[string]any{}
	for k, v := range content {
		f, ok := byName[k]
		if !ok {
			return nil, fmt.Errorf("the form has no field %q", k)
		}
		nv, err := f.check(v)
		if err != nil {
			return nil, err
		}
		out[k] = nv
	}
	for _, f := range fields {
		if _, ok := out[f.name]; !ok && f.required {
			return nil, fmt.Errorf("%s: required", f.name)
		}
	}
	return out, nil
}

// defaultText shows a default in a prompt.
func (f *formField) defaultText() string {
	switch d := f.def.(type) {
	case nil:
		return ""
	case bool:
		if d {
			return "Y/n"
		}
		return "y/N"
	case []any:
		parts := make([]string, 0, len(d))
		for _, x := range d {
			parts = append(parts, fmt.Sprint(x))
		}
		return strings.Join(parts, ",")
	case float64:
		return strconv.FormatFloat(d, 'g', -1, 64)
	}
	return fmt.Sprint(f.def)
}
