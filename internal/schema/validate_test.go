package schema

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustCompile(t testing.TB, s string, opts CompileOptions) *Compiled {
	t.Helper()
	c, err := Compile([]byte(s), opts)
	if err != nil {
		t.Fatalf("Compile(%s): %v", s, err)
	}
	return c
}

const keywordSchema = `{
  "type": "object",
  "properties": {
    "i": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 3},
    "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5},
    "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
    "e": {"enum": ["red", "green", 1, null, {"k": [1]}]},
    "one": {"enum": ["only"]},
    "c": {"const": {"v": true}},
    "t": {"type": ["string", "null", "integer"]},
    "arr": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3, "uniqueItems": true},
    "tuple": {"prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false},
    "has": {"contains": {"const": 7}, "maxContains": 1},
    "m": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}, "minProperties": 1, "maxProperties": 2},
    "pp": {"type": "object", "patternProperties": {"^n_": {"type": "number"}}, "additionalProperties": false},
    "names": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
    "dep": {"type": "object", "dependentRequired": {"card": ["cvv"]}},
    "not": {"not": {"type": "string"}},
    "one2": {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
    "any": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["k"]}]},
    "cond": {"if": {"type": "string"}, "then": {"minLength": 3}, "else": {"type": "integer"}},
    "nested": {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "boolean"}}}}},
    "weird key.with dots": {"type": "object", "properties": {"1st": {"type": "integer"}}},
    "never": false
  },
  "additionalProperties": false
}`

func TestValidateMessages(t *testing.T) {
	c := mustCompile(t, keywordSchema, CompileOptions{Label: "arguments"})
	tests := []struct{ in, want string }{
		{`{"i":"3"}`, `property "i": expected integer, got string`},
		{`{"i":0}`, `property "i": must be >= 1 (got 0)`},
		{`{"i":12}`, `property "i": must be <= 10 (got 12)`},
		{`{"i":4}`, `property "i": must be a multiple of 3`},
		{`{"x":0}`, `property "x": must be > 0 (got 0)`},
		{`{"x":1.5}`, `property "x": must be < 1.5 (got 1.5)`},
		{`{"s":"a"}`, `property "s": must be at least 2 characters long (got 1)`},
		{`{"s":"abcde"}`, `property "s": must be at most 4 characters long (got 5)`},
		{`{"s":"AB"}`, `property "s": must match the pattern "^[a-z]+$"`},
		{`{"e":"blue"}`, `property "e": must be one of "red", "green", 1, null, {"k":[1]}`},
		{`{"one":"other"}`, `property "one": must be "only"`},
		{`{"c":{"v":false}}`, `property "c": must be {"v":true}`},
		{`{"t":1.5}`, `property "t": expected string, integer or null, got number`},
		{`{"arr":[]}`, `property "arr": must have at least 1 item (got 0)`},
		{`{"arr":[1,2,3,4]}`, `property "arr": must have at most 3 items (got 4)`},
		{`{"arr":[1,2,1]}`, `property "arr": must not contain duplicate items (items 0 and 2 are equal)`},
		{`{"arr":[1,"2"]}`, `property "arr[1]": expected integer, got string`},
		{`{"tuple":["a",1]}`, `property "tuple[1]": expected boolean, got integer`},
		{`{"tuple":["a",true,null]}`, `property "tuple[2]": no value is allowed here`},
		{`{"has":[1,2]}`, `property "has": must contain at least one item matching the "contains" schema`},
		{`{"has":[7,7]}`, `property "has": must contain at most 1 item matching the "contains" schema`},
		{`{"m":{}}`, `property "m": must have at least 1 property (got 0)`},
		{`{"m":{"a":"1","b":"2","c":"3"}}`, `property "m": must have at most 2 properties (got 3)`},
		{`{"m":{"a":"1","b":"long"}}`, `property "m.b": must be at most 3 characters long (got 4)`},
		{`{"pp":{"n_a":1,"n_b":"x"}}`, `property "pp.n_b": expected number, got string`},
		{`{"pp":{"n_a":1,"other":1,"more":2}}`, `property "pp": unexpected properties "more", "other"`},
		{`{"names":{"ok":1,"Bad":2}}`, `property name "Bad" in "names": must match the pattern "^[a-z]+$"`},
		{`{"dep":{"card":"x"}}`, `property "dep": missing property "cvv" (required when "card" is present)`},
		{`{"not":"s"}`, `property "not": must not match the "not" schema`},
		{`{"one2":5}`, `property "one2": must match exactly one of the "oneOf" schemas, but matches more than one`},
		{`{"one2":-1.5}`, `property "one2": must match exactly one of the "oneOf" schemas, but matches none (#0: expected integer, got number; #1: must be >= 0 (got -1.5))`},
		{`{"any":{"j":1}}`, `property "any": must match at least one of the "anyOf" schemas (#0: expected string, got object; #1: missing required property "k")`},
		{`{"cond":"ab"}`, `property "cond": must be at least 3 characters long (got 2)`},
		{`{"cond":true}`, `property "cond": expected integer, got boolean`},
		{`{"nested":[[],[{"v":true},{"v":1}]]}`, `property "nested[1][1].v": expected boolean, got integer`},
		{`{"weird key.with dots":{"1st":"x"}}`, `property "[\"weird key.with dots\"][\"1st\"]": expected integer, got string`},
		{`{"never":1}`, `property "never": no value is allowed here`},
		{`{"zzz":1}`, `unexpected property "zzz"`},
		{`7`, `expected object, got integer`},
		{`null`, `expected object, got null`},
	}
	for _, tt := range tests {
		err := c.ValidateJSON([]byte(tt.in))
		want := "arguments: " + tt.want
		if err == nil || err.Error() != want {
			t.Errorf("ValidateJSON(%s)\n got %v\nwant %s", tt.in, err, want)
		}
	}
	// Valid values.
	for _, in := range []string{
		`{}`, `{"i":3,"x":1,"s":"ab","e":null,"c":{"v":true},"t":null,"arr":[1],"tuple":["a",false]}`,
		`{"has":[7,1],"m":{"a":"1"},"pp":{"n_x":2},"names":{"abc":1},"dep":{"card":1,"cvv":2},"not":1}`,
		`{"one2":-1,"any":"s","cond":"abc","nested":[[{"v":false}]]}`, `{"cond":5,"e":{"k":[1.0]}}`,
	} {
		if err := c.ValidateJSON([]byte(in)); err != nil {
			t.Errorf("ValidateJSON(%s) = %v", in, err)
		}
	}
}

func TestValidateGoValues(t *testing.T) {
	c := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer"},"l":{"type":"array","items":{"type":"string"}}},"required":["n"],"additionalProperties":false}`, CompileOptions{})
	in := map[string]any{"n": 1.0, "l": []any{"a", "b"}}
	if err := c.Validate(in); err != nil {
		t.Errorf("Validate(map) = %v", err)
	}
	if _, ok := in["l"].([]any); !ok {
		t.Error("Validate modified its argument")
	}
	type T struct {
		N int      `json:"n"`
		L []string `json:"l,omitempty"`
	}
	if err := c.Validate(T{N: 1}); err != nil {
		t.Errorf("Validate(struct) = %v", err)
	}
	if err := c.Validate(&T{N: 1, L: []string{"x"}}); err != nil {
		t.Errorf("Validate(*struct) = %v", err)
	}
	if err := c.Validate(map[string]int{"n": 1}); err != nil {
		t.Errorf("Validate(map[string]int) = %v", err)
	}
	if err := c.Validate(stdjson.RawMessage(`{"n":1}`)); err != nil {
		t.Errorf("Validate(RawMessage) = %v", err)
	}
	if err := c.Validate(map[string]any{"n": stdjson.Number("2")}); err != nil {
		t.Errorf("Validate(json.Number) = %v", err)
	}
	for v, want := range map[any]string{
		"not an object": `value: expected object, got string`,
		3:               `value: expected object, got integer`,
	} {
		if err := c.Validate(v); err == nil || err.Error() != want {
			t.Errorf("Validate(%v) = %v, want %s", v, err, want)
		}
	}
	tests := []struct {
		v    any
		want string
	}{
		{map[string]any{"n": "1"}, `value: property "n": expected integer, got string`},
		{map[string]any{"n": 1.0, "l": []any{"a", 2.0}}, `value: property "l[1]": expected string, got integer`},
		{map[string]any{"n": 1.0, "x": nil}, `value: unexpected property "x"`},
		{map[string]any{"n": func() {}}, `value: cannot be encoded as JSON`},
		{map[string]any{"n": "\xff"}, `value: cannot be encoded as JSON: invalid UTF-8`},
	}
	for _, tt := range tests {
		if err := c.Validate(tt.v); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Validate(%v) = %v, want %s", tt.v, err, tt.want)
		}
	}
}

func TestValidationErrorType(t *testing.T) {
	c := mustCompile(t, `{"type":"object","properties":{"a":{"type":"integer"}}}`, CompileOptions{Label: "arguments"})
	err := c.ValidateJSON([]byte(`{"a":"x"}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%T is not a *ValidationError", err)
	}
	if ve.Label != "arguments" || !reflect.DeepEqual(ve.Errors, []string{`property "a": expected integer, got string`}) {
		t.Errorf("got %+v", ve)
	}
	if errors.Unwrap(err) != nil || errors.Is(err, ErrLimitExceeded) {
		t.Errorf("schema violation unwraps to %v", errors.Unwrap(err))
	}
	wrapped := fmt.Errorf("calling tool: %w", err)
	if !errors.As(wrapped, &ve) {
		t.Error("errors.As through a wrapper failed")
	}
	if got := (&ValidationError{Errors: []string{"x"}}).Error(); got != "value: x" {
		t.Errorf("default label: %q", got)
	}
}

func TestValidateInvalidJSON(t *testing.T) {
	c := mustCompile(t, `{"type":"object"}`, CompileOptions{Label: "arguments"})
	tests := []struct{ in, want string }{
		{``, `arguments: invalid JSON: no data`},
		{`{"a":1,"a":2}`, `arguments: invalid JSON: duplicate object member name "a"`},
		{"{\"a\":\"\xff\"}", `arguments: invalid JSON: invalid UTF-8`},
		{`{} {}`, `arguments: invalid JSON: unexpected data after the top-level value`},
		{`{"a":`, `arguments: invalid JSON: unexpected EOF`},
		{`{"a":1e999}`, `arguments: invalid JSON: number 1e999 is out of range`},
		{`{'a':1}`, `arguments: invalid JSON: invalid character '\''`},
	}
	for _, tt := range tests {
		err := c.ValidateJSON([]byte(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ValidateJSON(%q)\n got %v\nwant prefix %s", tt.in, err, tt.want)
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || errors.Is(err, ErrLimitExceeded) {
			t.Errorf("ValidateJSON(%q): %#v", tt.in, err)
		}
	}
}

func TestValidateLimits(t *testing.T) {
	c := mustCompile(t, `{"type":"object","additionalProperties":{"type":"array","items":{"type":"integer"}}}`,
		CompileOptions{Label: "arguments", Limits: Limits{MaxInstanceBytes: 1000, MaxInstanceDepth: 5, MaxValidationCost: 500}})
	deep := `{"a":` + strings.Repeat(`[`, 5) + strings.Repeat(`]`, 5) + `}`
	big := `{"a":[` + strings.Repeat(`1,`, 600) + `1]}`
	costly := `{"a":[` + strings.Repeat(`1,`, 300) + `1]}`
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"deep JSON", c.ValidateJSON([]byte(deep)), "arguments: nested too deeply (the limit is 5 levels)"},
		{"big JSON", c.ValidateJSON([]byte(big)), fmt.Sprintf("arguments: too large (%d bytes; the limit is 1000)", len(big))},
		{"costly JSON", c.ValidateJSON([]byte(costly)), "arguments: too complex to validate against this schema (the estimated cost exceeds the limit of 500)"},
		{"deep value", c.Validate(map[string]any{"a": []any{[]any{[]any{[]any{[]any{}}}}}}), "arguments: nested too deeply (the limit is 5 levels)"},
		{"big value", c.Validate(map[string]any{"a": strings.Repeat("x", 2000)}), "arguments: too large (more than 1000 bytes)"},
		{"cyclic value", c.Validate(cyclic()), "arguments: nested too deeply (the limit is 5 levels)"},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, tt.err, tt.want)
		}
		if !errors.Is(tt.err, ErrLimitExceeded) {
			t.Errorf("%s: %v does not wrap ErrLimitExceeded", tt.name, tt.err)
		}
	}
	// Just under the limits.
	if err := c.ValidateJSON([]byte(`{"a":` + strings.Repeat(`[`, 4) + strings.Repeat(`]`, 4) + `}`)); err == nil || errors.Is(err, ErrLimitExceeded) {
		t.Errorf("depth 5: got %v, want a validation error", err)
	}
	if err := c.ValidateJSON([]byte(`{"a":[1,2,3]}`)); err != nil {
		t.Errorf("small: %v", err)
	}
}

func cyclic() map[string]any {
	m := map[string]any{}
	m["a"] = []any{m}
	return m
}

// TestMessagesBounded checks that hostile instances cannot make error
// messages long.
func TestMessagesBounded(t *testing.T) {
	c := mustCompile(t, keywordSchema, CompileOptions{Label: "arguments"})
	long := strings.Repeat("ü", 100000)
	var extras []string
	for i := range 1000 {
		extras = append(extras, fmt.Sprintf(`"%s%d":1`, strings.Repeat("k", 100), i))
	}
	inputs := []string{
		`{"` + long + `":1}`,
		`{` + strings.Join(extras, ",") + `}`,
		`{"s":"` + long + `"}`,
		`{"e":"` + long + `"}`,
		`{"any":["` + long + `"]}`,
		`{"any":{"` + long + `":"` + long + `"}}`,
		`{"m":{"` + long + `":"` + long + `"}}`,
		`{"names":{"` + long + `":1}}`,
		`{"nested":[[{"v":"` + long + `"}]]}`,
		`{"pp":{"` + long + `":1}}`,
		`{"t":[` + strings.Repeat(`"`+strings.Repeat("y", 1000)+`",`, 100) + `1]}`,
	}
	for _, in := range inputs {
		err := c.ValidateJSON([]byte(in))
		if err == nil {
			t.Errorf("ValidateJSON(%.40s...) = nil", in)
			continue
		}
		if n := len(err.Error()); n > 1200 {
			t.Errorf("ValidateJSON(%.40s...): message is %d bytes: %.200s", in, n, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("message has a newline: %q", err)
		}
	}
}

// TestPathologicalBounded checks that hostile schema/instance combinations
// are refused or validated quickly.
func TestPathologicalBounded(t *testing.T) {
	nest := func(open, leaf, close string, n int) string {
		return strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
	}
	var defs []string
	for i := range 17 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d17":{"type":"integer"}`)
	tests := []struct {
		name, schema, instance string
	}{
		{
			// Each level applies the next one twice: 2^depth evaluations.
			"doubling recursion",
			`{"type":"object","$defs":{"n":{"allOf":[{"properties":{"c":{"$ref":"#/$defs/n"}}},{"properties":{"c":{"$ref":"#/$defs/n"}}}]}},"properties":{"c":{"$ref":"#/$defs/n"}}}`,
			nest(`{"c":`, `1`, `}`, 60),
		},
		{
			// anyOf at every level, failing on the way back up.
			"anyOf recursion",
			`{"type":"object","$defs":{"n":{"anyOf":[{"type":"string"},{"type":"object","properties":{"c":{"$ref":"#/$defs/n"}},"required":["c"]}]}},"properties":{"c":{"$ref":"#/$defs/n"}}}`,
			nest(`{"c":`, `1`, `}`, 100),
		},
		{
			"exponential in place",
			`{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"a":{"$ref":"#/$defs/d0"}}}`,
			`{"a":"x"}`,
		},
		{
			"long string, complex regex",
			`{"type":"object","properties":{"s":{"pattern":"` + strings.Repeat("(a|b|ab|ba)*", 40) + `c"}}}`,
			`{"s":"` + strings.Repeat("ab", 1<<20) + `"}`,
		},
		{
			"wide object, many patterns",
			`{"type":"object","patternProperties":{` + manyPatterns(50) + `},"additionalProperties":{"anyOf":[{"type":"string"},{"type":"integer"}]}}`,
			`{` + manyKeys(5000, 100) + `}`,
		},
		{
			"unique nested items",
			`{"type":"object","properties":{"u":{"uniqueItems":true,"items":{"uniqueItems":true}}}}`,
			`{"u":[` + strings.Repeat(`[`+strings.Repeat(`[1,2],`, 300)+`1],`, 300) + `1]}`,
		},
		{
			// Each instance level goes through a long chain of $refs: deep
			// recursion in jsonschema-go.
			"deep recursion",
			strings.Replace(longRefChain(2000), `"d2000":{}`, `"d2000":{"properties":{"a":{"$ref":"#/$defs/d0"}}}`, 1),
			nest(`{"a":`, `1`, `}`, 20),
		},
		{
			"deep string failure",
			`{"type":"object","$defs":{"n":{"type":"object","properties":{"c":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"string","maxLength":2}]}}}},"properties":{"c":{"$ref":"#/$defs/n"}}}`,
			nest(`{"c":`, `"`+strings.Repeat("x", 3<<20)+`"`, `}`, 120),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			c, err := Compile([]byte(tt.schema), CompileOptions{Label: "arguments"})
			if err != nil {
				t.Logf("compile: %v (%v)", err, time.Since(start))
				if !errors.Is(err, ErrLimitExceeded) {
					t.Errorf("compile error %v is not a limit error", err)
				}
				return
			}
			err = c.ValidateJSON([]byte(tt.instance))
			d := time.Since(start)
			t.Logf("validate: %.200v (%v)", err, d)
			// Generous, to allow for the race detector and slow machines;
			// without the limits these take minutes or crash.
			if d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func manyPatterns(n int) string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf(`"^k%d(a|b)*c$":{"type":"string"}`, i))
	}
	return strings.Join(ps, ",")
}

func manyKeys(n, size int) string {
	var ks []string
	for i := range n {
		ks = append(ks, fmt.Sprintf(`"%s%d":1`, strings.Repeat("a", size), i))
	}
	return strings.Join(ks, ",")
}

func TestConcurrentValidate(t *testing.T) {
	c := mustCompile(t, keywordSchema, CompileOptions{})
	inputs := []string{
		`{"arr":[1,"x"]}`, `{"m":{"a":1}}`, `{"pp":{"n_1":"x"}}`, `{"any":{}}`, `{"nested":[[{"v":2}]]}`,
		`{"names":{"X":1}}`, `{"i":5}`, `{}`,
	}
	want := make([]string, len(inputs))
	for i, in := range inputs {
		want[i] = fmt.Sprint(c.ValidateJSON([]byte(in)))
	}
	c = mustCompile(t, keywordSchema, CompileOptions{}) // fresh caches
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(inputs)
				if got := fmt.Sprint(c.ValidateJSON([]byte(inputs[k]))); got != want[k] {
					t.Errorf("ValidateJSON(%s) = %s, want %s", inputs[k], got, want[k])
				}
			}
		})
	}
	wg.Wait()
}

// TestValidateDeterministic checks that when several properties fail, the
// same one (the first by name) is always reported, although jsonschema-go
// checks them in random order.
func TestValidateDeterministic(t *testing.T) {
	c := mustCompile(t, keywordSchema, CompileOptions{})
	in := []byte(`{"x":"1","s":1,"i":"1","e":"?","c":1,"m":{"z":1,"b":2,"a":3}}`)
	for range 50 {
		if err := c.ValidateJSON(in); err == nil || err.Error() != `value: property "c": must be {"v":true}` {
			t.Fatalf("got %v", err)
		}
		if err := c.ValidateJSON([]byte(`{"m":{"z":1,"b":2,"a":3}}`)); err == nil || err.Error() != `value: property "m.a": expected string, got integer` {
			t.Fatalf("got %v", err)
		}
	}
}

// TestExplainBudget checks that explaining a failure is bounded too: beyond
// its budget the message is less precise, but still names the keyword.
func TestExplainBudget(t *testing.T) {
	s := `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"v":{"type":"integer"}}}}}}`
	in := []byte(`{"a":[` + strings.Repeat(`{"v":1},`, 300) + `{"v":"x"}]}`)
	c := mustCompile(t, s, CompileOptions{})
	if err := c.ValidateJSON(in); err == nil || err.Error() != `value: property "a[300].v": expected integer, got string` {
		t.Errorf("default budget: %v", err)
	}
	c = mustCompile(t, s, CompileOptions{Limits: Limits{MaxValidationCost: 1600}})
	if err := c.ValidateJSON(in); err == nil || err.Error() != `value: property "a[*].v": expected integer` {
		t.Errorf("small budget: %v", err)
	}
}
