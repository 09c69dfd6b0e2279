// Package schema infers, compiles and validates the JSON Schemas of MCP tools
// (inputSchema and outputSchema).
//
// It is a thin, hardened layer over github.com/google/jsonschema-go, which
// does the inference and the validation. This package adds: exact
// preservation of user-supplied schemas, refusal of remote references and of
// schemas that would make validation recurse forever, resource limits for
// schemas and instances, a cost bound computed before validating, and short
// error messages that name the offending property.
//
// # Use
//
// Typed tools infer the schema of their argument (and result) type once, at
// registration:
//
//	in, err := schema.For[Args](schema.ForOptions{Label: "arguments"})
//	...
//	// per call:
//	if err := in.ValidateJSON(rawArguments); err != nil {
//		// err is a *schema.ValidationError; report it as a tool result
//		// with isError: true.
//	}
//	var args Args
//	err = json.Unmarshal(rawArguments, &args) // github.com/go-json-experiment/json
//
// Raw tools compile the schema they were given:
//
//	in, err := schema.Compile(rawSchema, schema.CompileOptions{Label: "arguments"})
//
// [Compiled.JSON] is the document to put in tools/list. For [Compile] it is
// the input, byte for byte: user schemas are never re-encoded, so $schema,
// $defs, $anchor, unknown keywords, key order and formatting all survive.
//
// Arguments are decoded twice (once into the validator's representation, once
// into the Go type). jsonschema-go cannot validate typed Go values instead:
// it refuses structs, because a zero field is ambiguous between "absent" and
// "present with the zero value", which makes "required" and
// "additionalProperties" unanswerable. Validating the decoded JSON is exact,
// and [Compiled.ValidateJSON] decodes in a single pass without copies.
//
// # Inference and struct tags
//
// [For] follows jsonschema-go's rules:
//
//   - The property name is the json tag name, or the Go field name if there
//     is none (matching is case-sensitive, as in json v2). Fields tagged
//     json:"-" and unexported fields are omitted. Fields of embedded structs
//     are promoted, as in encoding/json.
//   - Every property is required unless its json tag has omitempty or
//     omitzero. Pointers, slices and maps also accept null ("type":
//     ["null", ...]) but are still required without one of those options:
//     the tag, not the Go type, decides. (This matches what the SDK writes:
//     a nil pointer field without omitempty is encoded as null.)
//   - The jsonschema tag is the property's description,
//     `json:"city" jsonschema:"the city name"`, or, when it begins with
//     "WORD=" (which jsonschema-go reserves), JSON Schema keywords; see
//     "Keyword tags" below. It must not be empty.
//   - Structs become objects with "additionalProperties": false: unknown
//     arguments are rejected. An empty struct (struct{}) at the root becomes
//     {"type": "object"}, accepting any object, as for a tool without
//     parameters. any becomes {"type": "object"} at the root and is
//     unconstrained elsewhere. Maps with string keys become objects whose
//     "additionalProperties" is the element schema.
//   - Integers become "integer" (sized and unsigned types get minimum and
//     maximum), floats "number", bool "boolean", string "string".
//     Slices become arrays (also accepting null), arrays become arrays with
//     minItems = maxItems = length.
//   - Types whose json v2 encoding differs from their Go structure: []byte
//     and [N]byte become base64 strings ("contentEncoding": "base64");
//     time.Time a "date-time" string; big.Int an integer; big.Rat,
//     big.Float, slog.Level and every type with a MarshalText or
//     UnmarshalText method a string; json.RawMessage and jsontext.Value are
//     unconstrained.
//   - Inference fails, rather than produce a schema that disagrees with what
//     the SDK encodes or decodes, for: time.Duration (no default json v2
//     encoding), types with MarshalJSON, UnmarshalJSON, MarshalJSONTo or
//     UnmarshalJSONFrom methods, the json tag options string, format:...
//     and embed, embedded fields with a json tag or of non-struct type,
//     channels, functions, complex numbers, maps with non-string keys and
//     recursive types. Describe such types with [ForOptions.TypeSchemas], or
//     use a raw schema.
//   - The root must be an object: a struct, a map, an interface type, or a
//     pointer to one of these (a pointer root is treated as its element).
//     MCP requires "type": "object" at the root of both inputSchema and
//     outputSchema.
//
// # Keyword tags
//
// A jsonschema tag that begins with "WORD=" is a list of KEY=VALUE items
// separated by commas, for example
//
//	City  string `json:"city" jsonschema:"description='City, country',minLength=2,pattern=^[A-Z]"`
//	Days  int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=16,default=3"`
//	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
//
// The grammar ([TagGrammar] is the short form that errors quote):
//
//   - KEY is one of title, description, enum, default, example, minimum,
//     maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength,
//     pattern and format, each the JSON Schema keyword of that name
//     (example adds to "examples"). enum and example repeat, one value per
//     item; any other key given twice is an error. Spaces around items are
//     ignored.
//   - VALUE runs to the next comma, or is written in single quotes, in
//     which a quote is doubled (there is no other escape); see the example
//     below.
//   - enum, default and example values are read as the property's JSON
//     type (after inference, so TypeSchemas and the overrides above count):
//     the text itself for strings, a JSON number for integers (which must
//     be integral) and numbers, true or false for booleans, JSON text for
//     anything else (arrays, objects, unconstrained properties).
//
// A quoted value:
//
//	Name string `json:"name" jsonschema:"description='Surname, given names',pattern='^[A-Za-z'' ,-]+$'"`
//
// Inference fails, with an error naming the field and quoting
// [TagGrammar], for: an unknown key, a malformed item, minimum, maximum and
// the exclusive bounds on a property that is not an integer or a number, or
// with a value that is not a JSON number; minLength, maxLength, pattern and
// format on a property that is not a string, lengths that are not
// non-negative integers, a pattern that does not compile (RE2), an empty
// format; and enum, default or example values that are not of the
// property's type or do not validate against the property's schema (the
// Go type's range, the tag's own bounds and enum). minimum and maximum
// never widen a sized integer's range (the stricter bound is kept). An
// enum on a property that accepts null (a pointer) also lists null.
//
// Validation enforces enum, the bounds, the lengths and pattern; title,
// description, default, examples and format are annotations (default is
// not applied to arguments).
//
// jsonschema-go refuses "WORD=" tags, so inference runs on a mirror of the
// type (built with reflect.StructOf) whose keyword tags are markers, and the
// keywords are then set on the marked properties: every other rule above is
// jsonschema-go's own, unchanged, and a type without keyword tags is
// inferred exactly as before.
//
// # Supported schemas
//
// JSON Schema draft 2020-12 (the default when $schema is absent) and draft-07.
// $ref, $dynamicRef, $anchor and $id work within the document; references to
// anything outside it are refused when compiling, and nothing is ever fetched
// over the network. As in jsonschema-go, "format" and the content keywords are
// annotations only (not validated), and regular expressions use Go's RE2
// syntax (no backreferences or lookaround): a pattern that does not compile is
// a compile error.
//
// # Validation errors
//
// Validation stops at the first failing keyword (jsonschema-go's behavior);
// the *[ValidationError] describes it in one line, for example:
//
//	arguments: property "a": expected integer, got string
//	arguments: missing required property "city"
//	arguments: unexpected property "extra"
//	arguments: property "tags[2]": must be at most 10 characters long (got 12)
//	arguments: property "home.zip": must match the pattern "^[0-9]{5}$"
//	arguments: property "x": must match at least one of the "anyOf" schemas (#0: expected string, got object; #1: property "x.b": expected integer, got string)
//
// Messages quote at most short excerpts of instance values (member names,
// numbers), and are bounded in length and number whatever the input.
//
// # Resource limits
//
// Schemas can be hostile (a client validating structuredContent against an
// untrusted server's outputSchema), and so can instances (arguments from an
// untrusted client). [Limits] bound both:
//
//   - A schema is refused if it is larger than 1 MiB or nested deeper than
//     128 levels, if it contains a reference cycle that does not consume
//     input ({"$ref": "#"} would otherwise make jsonschema-go recurse until
//     the stack overflows, which kills the process), or if validating a
//     single value against it could exceed the cost limit (for example a
//     chain of definitions that each apply the next one twice: linear size,
//     exponential work).
//   - An instance is refused before validation if it is larger than 4 MiB,
//     nested deeper than 128 levels, or if an upper bound of the work needed
//     to validate it exceeds the cost limit. The bound is computed by walking
//     the instance alongside the schema's applicators, counting every
//     subschema any applicator could apply to every value (all branches of
//     anyOf, both then and else, and so on), weighted by the keywords' own
//     cost, and stopping as soon as it exceeds the limit; so it is cheap
//     (a few ns per unit; one unit is 100 to 500 ns of validation, and the
//     default limit is 500,000 units).
//   - Validation recursion is capped at 10,000 nested subschema
//     applications (instance depth times chains of $ref, allOf, ...), which
//     bounds the goroutine stack jsonschema-go uses.
//   - Explaining a failure (see above) may re-validate parts of the instance;
//     it gets half the cost limit, beyond which messages are less precise
//     (an unidentified item is shown as [*]).
//   - Regular expressions: Go's regexp package is not backtracking; it
//     guarantees time linear in the input, so "catastrophic backtracking"
//     patterns are harmless. The constant factor is the size of the compiled
//     program, which counted repetitions can make large from a short
//     pattern, so programs are capped at about 10,000 instructions per
//     pattern and 200,000 per schema, and matching cost (string length ×
//     program size) is part of the estimate.
//   - jsonschema-go embeds offending values in its messages with %v. The
//     validator is given the instance in a representation that formats
//     itself briefly, so that failing branches of an anyOf do not each print
//     a large document.
package schema
