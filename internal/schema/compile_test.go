package schema

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A 2020-12 schema exercising keywords that must reach clients unchanged.
const addressSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$comment": "keys deliberately not sorted; whitespace deliberately odd",
  "type":   "object",
  "properties": {
    "name": {"type": "string", "x-ui": {"widget": "text"}},
    "home": {"$ref": "#/$defs/address"},
    "work": {"$ref": "#work"},
    "kind": {"enum": ["home", "work"]},
    "note": {"allOf": [{"type": "string"}, {"maxLength": 20}], "anyOf": [{"minLength": 1}, {"const": ""}]}
  },
  "required": ["name", "home"],
  "additionalProperties": false,
  "if": {"properties": {"kind": {"const": "work"}}, "required": ["kind"]},
  "then": {"required": ["work"]},
  "else": {"not": {"required": ["work"]}},
  "$defs": {
    "address": {
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"}
      },
      "required": ["street", "zip"],
      "additionalProperties": false
    },
    "workAddress": {"$anchor": "work", "$ref": "#/$defs/address", "unevaluatedProperties": false}
  }
}`

func TestCompileVerbatim(t *testing.T) {
	raw := []byte(addressSchema)
	c, err := Compile(raw, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := c.JSON()
	if string(got) != addressSchema {
		t.Fatalf("JSON() changed the schema:\n%s", got)
	}
	// The result is a copy: changing it or the input changes nothing.
	got[0] = 'X'
	raw[0] = 'Y'
	if string(c.JSON()) != addressSchema {
		t.Fatal("JSON() aliases the input or a previous result")
	}
}

func TestCompileDefsRef(t *testing.T) {
	c, err := Compile([]byte(addressSchema), CompileOptions{Label: "arguments"})
	if err != nil {
		t.Fatal(err)
	}
	const home = `"home":{"street":"Main St 1","zip":"12345"}`
	tests := []struct {
		in   string
		want string // "" for valid
	}{
		{`{"name":"a",` + home + `}`, ""},
		{`{"name":"a",` + home + `,"kind":"home"}`, ""},
		{`{"name":"a",` + home + `,"kind":"work","work":{"street":"s","zip":"54321"}}`, ""},
		{`{"name":"a",` + home + `,"note":"hi"}`, ""},
		{`{"name":"a","home":{"street":"Main St 1","zip":"1234"}}`, `arguments: property "home.zip": must match the pattern "^[0-9]{5}$"`},
		{`{"name":"a","home":{"street":"Main St 1"}}`, `arguments: property "home": missing required property "zip"`},
		{`{"name":"a","home":{"street":"Main St 1","zip":"12345","floor":3}}`, `arguments: property "home": unexpected property "floor"`},
		{`{"name":"a",` + home + `,"extra":true}`, `arguments: unexpected property "extra"`},
		{`{"name":"a"}`, `arguments: missing required property "home"`},
		{`{` + home + `}`, `arguments: missing required property "name"`},
		{`{}`, `arguments: missing required properties "name", "home"`},
		{`{"name":"a",` + home + `,"kind":"office"}`, `arguments: property "kind": must be one of "home", "work"`},
		{`{"name":"a",` + home + `,"kind":"work"}`, `arguments: missing required property "work"`},
		{`{"name":"a",` + home + `,"work":{"street":"s","zip":"54321"}}`, `arguments: must not match the "not" schema`},
		{`{"name":"a",` + home + `,"kind":"work","work":{"street":"s","zip":"5432"}}`, `arguments: property "work.zip": must match the pattern "^[0-9]{5}$"`},
		{`{"name":"a",` + home + `,"note":"` + strings.Repeat("x", 21) + `"}`, `arguments: property "note": must be at most 20 characters long (got 21)`},
		{`{"name":"a",` + home + `,"note":7}`, `arguments: property "note": expected string, got integer`},
	}
	for _, tt := range tests {
		err := c.ValidateJSON([]byte(tt.in))
		if tt.want == "" {
			if err != nil {
				t.Errorf("ValidateJSON(%s) = %v, want nil", tt.in, err)
			}
			continue
		}
		if err == nil || err.Error() != tt.want {
			t.Errorf("ValidateJSON(%s)\n got %v\nwant %s", tt.in, err, tt.want)
		}
	}
}

func TestCompileDraft07(t *testing.T) {
	const s = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"definitions":{"pos":{"type":"integer","minimum":0}},
		"properties":{"n":{"$ref":"#/definitions/pos"},"pair":{"items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}}}`
	c, err := Compile([]byte(s), CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateJSON([]byte(`{"n":1,"pair":["a",1]}`)); err != nil {
		t.Error(err)
	}
	for in, want := range map[string]string{
		`{"n":-1}`:              `value: property "n": must be >= 0 (got -1)`,
		`{"pair":["a","b"]}`:    `value: property "pair[1]": expected integer, got string`,
		`{"pair":["a",1,true]}`: `value: property "pair[2]": no value is allowed here`,
	} {
		if err := c.ValidateJSON([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("ValidateJSON(%s)\n got %v\nwant %s", in, err, want)
		}
	}
}

func TestCompileDialects(t *testing.T) {
	for _, d := range []string{
		"https://json-schema.org/draft/2020-12/schema",
		"https://json-schema.org/draft/2020-12/schema#",
		"http://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft-07/schema",
	} {
		if _, err := Compile([]byte(`{"$schema":"`+d+`","type":"object"}`), CompileOptions{}); err != nil {
			t.Errorf("$schema %q: %v", d, err)
		}
	}
	for _, d := range []string{
		"https://json-schema.org/draft/2019-09/schema",
		"http://json-schema.org/draft-04/schema#",
		"json-schema.org/draft/2020-12/schema",
		"https://example.com/my-dialect",
	} {
		_, err := Compile([]byte(`{"$schema":"`+d+`","type":"object"}`), CompileOptions{})
		if err == nil || !strings.Contains(err.Error(), "unsupported $schema") {
			t.Errorf("$schema %q: got %v, want unsupported", d, err)
		}
	}
}

// TestCompileRemoteRefRefused checks that references outside the document
// are refused and that nothing is fetched.
func TestCompileRemoteRefRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()
	u := srv.URL
	schemas := []string{
		`{"type":"object","properties":{"a":{"$ref":"` + u + `/a.json"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"` + u + `/a.json#/$defs/x"}}}`,
		`{"type":"object","$id":"` + u + `/root.json","properties":{"a":{"$ref":"other.json"}}}`,
		`{"type":"object","properties":{"a":{"$dynamicRef":"` + u + `/a.json#x"}}}`,
		`{"type":"object","$ref":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"type":"object","properties":{"a":{"$ref":"a.json"}}}`,
		`{"$schema":"` + u + `/meta.json","type":"object"}`,
	}
	for _, s := range schemas {
		c, err := Compile([]byte(s), CompileOptions{})
		if err == nil {
			t.Errorf("Compile(%s) succeeded; validating {} gives %v", s, c.ValidateJSON([]byte(`{"a":1}`)))
			continue
		}
		if !strings.Contains(err.Error(), "remote references are not supported") && !strings.Contains(err.Error(), "unsupported $schema") {
			t.Errorf("Compile(%s) = %v, want a remote-reference error", s, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d HTTP requests were made", n)
	}
	// A reference to the document's own $id is local, not remote.
	local := `{"type":"object","$id":"` + u + `/root.json","$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"` + u + `/root.json#/$defs/x"},"b":{"$ref":"root.json#/$defs/x"}}}`
	c, err := Compile([]byte(local), CompileOptions{})
	if err != nil {
		t.Fatalf("Compile(local $id refs) = %v", err)
	}
	if err := c.ValidateJSON([]byte(`{"a":"x","b":1}`)); err == nil || err.Error() != `value: property "b": expected string, got integer` {
		t.Errorf("got %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d HTTP requests were made", n)
	}
}

func TestCompileRejects(t *testing.T) {
	deep := strings.Repeat(`{"not":`, 200) + `{}` + strings.Repeat(`}`, 200)
	var expDefs []string
	for i := range 30 {
		expDefs = append(expDefs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	expDefs = append(expDefs, `"d30":{}`)
	exponential := `{"type":"object","$defs":{` + strings.Join(expDefs, ",") + `},"properties":{"a":{"$ref":"#/$defs/d0"}}}`
	var manyRegexes []string
	for i := range 60 {
		manyRegexes = append(manyRegexes, fmt.Sprintf(`"p%d":{"pattern":"%s"}`, i, strings.Repeat("x{1000}", 4)))
	}
	tests := []struct {
		name, schema, want string
		limit              bool // errors.Is(err, ErrLimitExceeded)
	}{
		{"too large", `{"type":"object","description":"` + strings.Repeat("x", 1<<20) + `"}`, "document is too large", true},
		{"too deep", `{"type":"object","properties":{"a":` + deep + `}}`, "nested too deeply", true},
		{"invalid JSON", `{"type":"object",}`, "invalid JSON", false},
		{"trailing data", `{"type":"object"} {}`, "invalid JSON", false},
		{"empty", ``, "invalid JSON", false},
		{"duplicate names", `{"type":"object","type":"string"}`, "duplicate object member name", false},
		{"invalid UTF-8", "{\"type\":\"object\",\"description\":\"\xff\"}", "invalid UTF-8", false},
		{"not an object", `{"type":"string"}`, `the root must have "type": "object", not "string"`, false},
		{"no type", `{"properties":{}}`, `the root must have "type": "object"`, false},
		{"boolean root", `true`, `the root must be a JSON object`, false},
		{"array root", `[1,2]`, `the root must be a JSON object with "type": "object", not array`, false},
		{"self ref", `{"type":"object","$ref":"#"}`, "reference cycle", false},
		{"mutual refs", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "reference cycle", false},
		{"unused cycle", `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}}}`, "reference cycle", false},
		{"anchor cycle", `{"type":"object","$defs":{"a":{"$anchor":"a","not":{"$ref":"#a"}}}}`, "reference cycle", false},
		{"dynamic cycle", `{"type":"object","$dynamicAnchor":"n","$defs":{"a":{"$dynamicRef":"#n"}},"allOf":[{"$ref":"#/$defs/a"}]}`, "reference cycle", false},
		{"exponential", exponential, "too complex", true},
		{"long ref chain", longRefChain(maxValidationFrames + 5), "chain of more than", true},
		{"long pointer", `{"type":"object","properties":{"` + strings.Repeat("k", 9000) + `":{"properties":{"` + strings.Repeat("k", 9000) + `":{}}}}}`, "longer than", true},
		{"missing def", `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`, "does not refer to a schema", false},
		{"missing anchor", `{"type":"object","properties":{"a":{"$ref":"#nope"}}}`, `no anchor "nope"`, false},
		{"duplicate $id", `{"type":"object","$id":"https://x.test/s","$defs":{"a":{"$id":"https://x.test/a"},"b":{"$id":"https://x.test/a"}}}`, "is also used", false},
		{"case variant", `{"type":"object","properties":{"a":{"Type":"string"}}}`, `key "Type" differs from the keyword "type" only in case`, false},
		{"bad regex", `{"type":"object","properties":{"a":{"pattern":"(a"}}}`, "invalid regular expression", false},
		{"backreference", `{"type":"object","properties":{"a":{"pattern":"(a)\\1"}}}`, "invalid regular expression", false},
		{"nested repeats", `{"type":"object","properties":{"a":{"pattern":"((a{100}){100}){100}"}}}`, "invalid repeat count", false},
		{"huge regex", `{"type":"object","properties":{"a":{"pattern":"` + strings.Repeat("(ab{1000})", 11) + `"}}}`, "regular expression", true},
		{"huge pattern property", `{"type":"object","patternProperties":{"` + strings.Repeat("x{1000}", 11) + `":{}}}`, "too large", true},
		{"huge regexes in total", `{"type":"object","properties":{` + strings.Join(manyRegexes, ",") + `}}`, "too large in total", true},
		{"wrong keyword type", `{"type":"object","properties":[]}`, "properties must be an object", false},
		{"non-schema subschema", `{"type":"object","properties":{"a":5}}`, "a schema must be an object or a boolean", false},
		{"bad minimum", `{"type":"object","minimum":"x"}`, "invalid", false},
		{"relative $id", `{"type":"object","$id":"schema.json"}`, "does not resolve to an absolute URI", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.schema), CompileOptions{})
			if err == nil {
				t.Fatalf("Compile succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if got := errors.Is(err, ErrLimitExceeded); got != tt.limit {
				t.Errorf("errors.Is(%v, ErrLimitExceeded) = %v, want %v", err, got, tt.limit)
			}
			if len(err.Error()) > 2000 {
				t.Errorf("error message is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestCompileLimitsConfigurable(t *testing.T) {
	s := []byte(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{}}}}}`)
	if _, err := Compile(s, CompileOptions{Limits: Limits{MaxSchemaBytes: 20}}); !errors.Is(err, ErrLimitExceeded) {
		t.Errorf("MaxSchemaBytes: got %v", err)
	}
	if _, err := Compile(s, CompileOptions{Limits: Limits{MaxSchemaDepth: 4}}); !errors.Is(err, ErrLimitExceeded) {
		t.Errorf("MaxSchemaDepth: got %v", err)
	}
	if _, err := Compile(s, CompileOptions{Limits: Limits{MaxSchemaDepth: 5}}); err != nil {
		t.Errorf("MaxSchemaDepth 5: got %v", err)
	}
}

func TestCompileAllowNonObjectRoot(t *testing.T) {
	for _, s := range []string{`true`, `false`, `{"type":"array","items":{"type":"integer"}}`, `{}`} {
		if _, err := Compile([]byte(s), CompileOptions{AllowNonObjectRoot: true}); err != nil {
			t.Errorf("Compile(%s) = %v", s, err)
		}
	}
	c, err := Compile([]byte(`{"type":"array","items":{"type":"integer"}}`), CompileOptions{AllowNonObjectRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateJSON([]byte(`[1,"x"]`)); err == nil || err.Error() != `value: property "[1]": expected integer, got string` {
		t.Errorf("got %v", err)
	}
	c, err = Compile([]byte(`false`), CompileOptions{AllowNonObjectRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateJSON([]byte(`1`)); err == nil || err.Error() != `value: no value is allowed here` {
		t.Errorf("got %v", err)
	}
}

func TestCompileValidateDefaults(t *testing.T) {
	good := `{"type":"object","properties":{"n":{"type":"integer","default":3}}}`
	bad := `{"type":"object","properties":{"n":{"type":"integer","default":"three"}}}`
	if _, err := Compile([]byte(good), CompileOptions{ValidateDefaults: true}); err != nil {
		t.Errorf("good defaults: %v", err)
	}
	if _, err := Compile([]byte(bad), CompileOptions{ValidateDefaults: true}); err == nil || !strings.Contains(err.Error(), "invalid default") {
		t.Errorf("bad defaults: got %v", err)
	}
	if _, err := Compile([]byte(bad), CompileOptions{}); err != nil {
		t.Errorf("bad defaults, not validated: %v", err)
	}
}

func TestApplyDefaults(t *testing.T) {
	c, err := Compile([]byte(`{"type":"object","properties":{
		"n":{"type":"integer","default":3},
		"o":{"type":"object","properties":{"s":{"type":"string","default":"x"}}},
		"r":{"type":"integer","default":1}},"required":["r"]}`), CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasDefaults() {
		t.Error("HasDefaults() = false")
	}
	m := map[string]any{"n": 5.0}
	if err := c.ApplyDefaults(m); err != nil {
		t.Fatal(err)
	}
	want := `map[n:5 o:map[s:x]]`
	if got := fmt.Sprint(m); got != want {
		t.Errorf("after ApplyDefaults: %s, want %s", got, want)
	}
	if err := c.Validate(m); err == nil || err.Error() != `value: missing required property "r"` {
		t.Errorf("Validate = %v", err)
	}
	c2, _ := Compile([]byte(`{"type":"object"}`), CompileOptions{})
	if c2.HasDefaults() {
		t.Error("HasDefaults() = true")
	}
	if err := c2.ApplyDefaults(m); err != nil {
		t.Error(err)
	}
}

func longRefChain(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{}`, n))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"a":{"$ref":"#/$defs/d0"}}}`
}
