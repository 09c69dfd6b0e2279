package schema

import (
	"bytes"
	"cmp"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// CompileOptions configure [Compile].
type CompileOptions struct {
	// Label names the validated value in error messages, for example
	// "arguments" or "structuredContent". Default "value".
	Label string
	// AllowNonObjectRoot permits schemas whose root is not {"type": "object",
	// ...}. MCP requires tool inputSchema and outputSchema roots to have
	// type "object", so the default is to refuse other schemas.
	AllowNonObjectRoot bool
	// ValidateDefaults makes Compile check that every "default" value in the
	// schema is valid against the subschema containing it.
	ValidateDefaults bool
	// Limits bound the resources used by Compile and by validation.
	Limits Limits
}

// Compiled is a schema that is ready to validate instances. It is safe for
// concurrent use. Create one with [Compile] or [For].
type Compiled struct {
	raw      []byte
	label    string
	limits   Limits
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	g        *graph

	// Lazily built validators for subschemas, used only to explain failures.
	subMu  sync.Mutex
	subs   map[int]*jsonschema.Resolved
	maxSub int
}

// Compile prepares the user-supplied JSON Schema raw for validation.
//
// raw is kept verbatim: [Compiled.JSON] returns exactly these bytes, so every
// keyword (including ones this package does not understand) reaches clients
// unchanged. Compile refuses:
//   - documents larger than Limits.MaxSchemaBytes or nested deeper than
//     Limits.MaxSchemaDepth, invalid JSON, invalid UTF-8 and duplicate
//     object member names;
//   - $schema dialects other than draft 2020-12 (the default when $schema is
//     absent) and draft-07;
//   - unless AllowNonObjectRoot is set, roots without "type": "object";
//   - $ref and $dynamicRef targets outside the document: remote references
//     are never fetched;
//   - reference cycles that do not consume input (such as {"$ref": "#"}),
//     which would make validation recurse forever;
//   - regular expressions that are invalid or too large, and schemas for
//     which validating even a single value would exceed
//     Limits.MaxValidationCost;
//   - keys that differ from a keyword only in letter case (jsonschema-go,
//     which matches keywords case-insensitively, would disagree with other
//     validators about them).
func Compile(raw []byte, opts CompileOptions) (*Compiled, error) {
	lim := opts.Limits.withDefaults()
	if len(raw) > lim.MaxSchemaBytes {
		return nil, limitErrorf("schema: document is too large (%d bytes; the limit is %d)", len(raw), lim.MaxSchemaBytes)
	}
	doc, err := decodeSchemaDocument(raw, lim.MaxSchemaDepth)
	if err != nil {
		return nil, err
	}

	rootObj, _ := doc.(map[string]any)
	dialect := ""
	if rootObj != nil {
		if v, ok := rootObj["$schema"]; ok {
			s, ok := v.(string)
			if !ok {
				return nil, errors.New("schema: $schema must be a string")
			}
			dialect = s
		}
	}
	canonical, d, ok := canonicalDialect(dialect)
	if !ok {
		return nil, fmt.Errorf("schema: unsupported $schema %q: only draft 2020-12 (the default) and draft-07 are supported", truncate(dialect, 128))
	}
	if !opts.AllowNonObjectRoot {
		if rootObj == nil {
			what := jsonTypeOf(doc)
			if b, ok := doc.(bool); ok {
				what = fmt.Sprintf("the boolean schema %v", b)
			}
			return nil, fmt.Errorf(`schema: the root must be a JSON object with "type": "object", not %s`, what)
		}
		if t := rootObj["type"]; t != "object" {
			if t == nil {
				return nil, errors.New(`schema: the root must have "type": "object"`)
			}
			b, _ := stdjson.Marshal(t)
			return nil, fmt.Errorf(`schema: the root must have "type": "object", not %s`, truncate(string(b), 64))
		}
	}

	g, err := analyze(doc, d, lim)
	if err != nil {
		return nil, err
	}

	s := new(jsonschema.Schema)
	if err := stdjson.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("schema: invalid: %v", err)
	}
	// Always set: jsonschema-go then never writes to the schema while
	// resolving it (see subValidator).
	s.Schema = canonical
	makeSafe(s)

	ropts := &jsonschema.ResolveOptions{Loader: refuseRemote}
	resolved, err := s.Resolve(ropts)
	if err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	if opts.ValidateDefaults && g.hasDefaults {
		// The analysis above has ruled out infinite recursion; now bound the
		// work of validating the defaults.
		if err := checkDefaultsCost(g, lim); err != nil {
			return nil, err
		}
		ropts.ValidateDefaults = true
		if _, err := s.Resolve(ropts); err != nil {
			return nil, fmt.Errorf("schema: invalid default: %v", err)
		}
	}

	return &Compiled{
		raw:      slices.Clone(raw),
		label:    cmp.Or(opts.Label, "value"),
		limits:   lim,
		schema:   s,
		resolved: resolved,
		g:        g,
		maxSub:   min(max(4<<20/max(len(raw), 1), 4), 64),
	}, nil
}

func refuseRemote(u *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("remote reference %q: remote references are not supported", u)
}

// JSON returns the schema document: for [Compile] the bytes passed to it,
// unchanged; for [For] the inferred schema. The result is a copy.
func (c *Compiled) JSON() []byte { return slices.Clone(c.raw) }

// HasDefaults reports whether the schema contains any "default" keyword.
func (c *Compiled) HasDefaults() bool { return c.g.hasDefaults }

// ValidateJSON decodes data as a single JSON value and validates it. Decoding
// uses github.com/go-json-experiment/json and rejects invalid JSON, invalid
// UTF-8, duplicate object member names and trailing data. It is the preferred
// entry point: decoding directly into the representation the validator uses
// costs one pass and no copies.
//
// The error, if any, is a *ValidationError; it wraps ErrLimitExceeded if the
// instance exceeded the configured Limits.
func (c *Compiled) ValidateJSON(data []byte) error {
	if len(data) == 0 {
		return c.labeled(&ValidationError{Errors: []string{"invalid JSON: no data"}, cause: io.ErrUnexpectedEOF})
	}
	inst, err := decodeInstance(data, c.limits)
	if err != nil {
		return c.labeled(err)
	}
	return c.validate(inst)
}

// Validate validates v, which should be a JSON value as produced by
// unmarshaling into an any (nil, bool, float64, string, []any,
// map[string]any). Other Go values (structs, typed maps, json.Number, ...) are
// first marshaled to JSON with github.com/go-json-experiment/json and decoded
// back, which is slower. v is not modified.
//
// The error, if any, is a *ValidationError; it wraps ErrLimitExceeded if the
// instance exceeded the configured Limits.
func (c *Compiled) Validate(v any) error {
	inst, err := convertInstance(v, c.limits)
	if err != nil {
		return c.labeled(err)
	}
	return c.validate(inst)
}

func (c *Compiled) labeled(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		ve.Label = c.label
		return ve
	}
	return &ValidationError{Label: c.label, Errors: []string{truncate(err.Error(), maxMessageLen)}, cause: err}
}

func (c *Compiled) validate(inst any) (err error) {
	est := estimator{budget: float64(c.limits.MaxValidationCost)}
	est.visit(inst, c.g.root, 1)
	if est.over() {
		return c.labeled(limitError(fmt.Sprintf("too complex to validate against this schema (the estimated cost exceeds the limit of %d)", c.limits.MaxValidationCost)))
	}
	verr := safeValidate(c.resolved, inst)
	if verr == nil {
		return nil
	}
	return c.labeled(c.explain(verr, inst))
}

// safeValidate runs jsonschema-go's validator, turning a panic (which would
// indicate a bug in it or in this package) into an error.
func safeValidate(r *jsonschema.Resolved, inst any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	return r.Validate(inst)
}

// ApplyDefaults sets missing, optional properties of instance that have a
// "default" in the schema, recursively through "properties" (jsonschema-go
// does not follow $ref or other applicators for defaults). Call it before
// Validate. Values are decoded with encoding/json, so numbers are float64.
func (c *Compiled) ApplyDefaults(instance map[string]any) (err error) {
	if !c.g.hasDefaults || instance == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schema: applying defaults: %v", p)
		}
	}()
	return c.resolved.ApplyDefaults(&instance)
}

// decodeSchemaDocument parses a schema document into plain Go values
// (map[string]any, []any, string, float64, bool, nil), rejecting invalid JSON,
// invalid UTF-8, duplicate names and documents nested deeper than maxDepth.
func decodeSchemaDocument(raw []byte, maxDepth int) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	var read func(depth int) (any, error)
	read = func(depth int) (any, error) {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch tok.Kind() {
		case 'n':
			return nil, nil
		case 't':
			return true, nil
		case 'f':
			return false, nil
		case '"':
			return tok.String(), nil
		case '0':
			f, err := tok.Float()
			if err != nil || math.IsInf(f, 0) {
				return nil, fmt.Errorf("number %s is out of range", truncate(tok.String(), 40))
			}
			return f, nil
		case '{', '[':
			if depth >= maxDepth {
				return nil, limitErrorf("schema: document is nested too deeply (the limit is %d levels)", maxDepth)
			}
			if tok.Kind() == '[' {
				a := []any{}
				for dec.PeekKind() != ']' {
					v, err := read(depth + 1)
					if err != nil {
						return nil, err
					}
					a = append(a, v)
				}
				_, err := dec.ReadToken()
				return a, err
			}
			m := map[string]any{}
			for dec.PeekKind() != '}' {
				ktok, err := dec.ReadToken()
				if err != nil {
					return nil, err
				}
				k := ktok.String() // before the token is invalidated
				v, err := read(depth + 1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			_, err := dec.ReadToken()
			return m, err
		}
		return nil, fmt.Errorf("unexpected token %v", tok)
	}
	v, err := read(0)
	if err == nil {
		if _, err2 := dec.ReadToken(); err2 != io.EOF {
			err = cmpErr(err2, errors.New("unexpected data after the top-level value"))
		}
	}
	if err != nil {
		if errors.Is(err, ErrLimitExceeded) {
			return nil, err
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("schema: invalid JSON: %w", err)
	}
	return v, nil
}

func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// makeSafe replaces the enum and const values of every subschema with the
// briefly-formatting safe tree types, because jsonschema-go prints them in
// full in its error messages (see instance.go).
func makeSafe(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for i, e := range s.Enum {
		s.Enum[i] = safeValue(e)
	}
	if s.Const != nil {
		v := safeValue(*s.Const)
		s.Const = &v
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions, s.DependencySchemas, s.Properties, s.PatternProperties, s.DependentSchemas} {
		for _, sub := range m {
			makeSafe(sub)
		}
	}
	for _, l := range [][]*jsonschema.Schema{s.PrefixItems, s.ItemsArray, s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range l {
			makeSafe(sub)
		}
	}
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalItems, s.Contains, s.UnevaluatedItems,
		s.AdditionalProperties, s.PropertyNames, s.UnevaluatedProperties, s.Not, s.If, s.Then, s.Else, s.ContentSchema} {
		makeSafe(sub)
	}
}

func safeValue(v any) any {
	switch v := v.(type) {
	case string:
		return jstring(v)
	case map[string]any:
		m := make(jobject, len(v))
		for k, e := range v {
			m[k] = safeValue(e)
		}
		return m
	case []any:
		a := make(jarray, len(v))
		for i, e := range v {
			a[i] = safeValue(e)
		}
		return a
	default:
		return v
	}
}

// checkDefaultsCost bounds the work of validating the schema's default values.
func checkDefaultsCost(g *graph, lim Limits) error {
	est := estimator{budget: float64(lim.MaxValidationCost)}
	for _, n := range g.nodes {
		if !n.hasDefault {
			continue
		}
		v, err := convertInstance(n.obj["default"], lim)
		if err != nil {
			return fmt.Errorf("schema at %s: default: %v", displayPointer(n.path), err)
		}
		est.visit(v, n, 1)
		if est.over() {
			return limitErrorf("schema: validating the default values would exceed the cost limit of %d", lim.MaxValidationCost)
		}
	}
	return nil
}

// limitErr is a compile-time limit error.
type limitErr struct{ msg string }

func (e *limitErr) Error() string        { return e.msg }
func (e *limitErr) Is(target error) bool { return target == ErrLimitExceeded }

func limitErrorf(format string, args ...any) error {
	return &limitErr{msg: fmt.Sprintf(format, args...)}
}

// limitError is a validation-time limit error.
func limitError(msg string) *ValidationError {
	return &ValidationError{Errors: []string{msg}, cause: ErrLimitExceeded}
}

// ValidationError reports why a value does not satisfy a schema (or could not
// be checked: invalid JSON, limits exceeded). Its message is concise, names
// the offending location, and is bounded in length whatever the input.
type ValidationError struct {
	// Label names the validated value ("arguments", "structuredContent").
	Label string
	// Errors holds at most a few messages of at most a few hundred bytes
	// each, such as `property "a": expected integer, got string`.
	// jsonschema-go stops at the first failing keyword, so there is usually
	// exactly one.
	Errors []string

	cause error
}

func (e *ValidationError) Error() string {
	return cmp.Or(e.Label, "value") + ": " + strings.Join(e.Errors, "; ")
}

// Unwrap returns ErrLimitExceeded for limit errors, the decoding error for
// invalid JSON, and nil otherwise.
func (e *ValidationError) Unwrap() error { return e.cause }
