package pmcp

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/schema"
)

// The fast acceptance check of tools_validate.go may only accept what the
// general validator accepts.

var flatSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"number"},"s":{"type":["null","string"]},"u":{"type":"integer","minimum":0,"maximum":255}},"required":["a","s","u"],"additionalProperties":false}`,
	`{"type":"object","properties":{"flag":{"type":"boolean","description":"d"},"n":{"type":["integer","null"],"minimum":-5.5}},"title":"t"}`,
	`{"type":"object"}`,
	`{"type":"object","properties":{},"additionalProperties":true}`,
	`{"type":"object","properties":{"x":{"type":"integer","maximum":1e300}},"required":["x"]}`,
	// Not handled: the general validator alone decides.
	`{"type":"object","properties":{"t":{"type":["null","array"],"items":{"type":"string"}}}}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":2}}}`,
	`{"type":"object","required":["missing"]}`,
	`{"type":"object","properties":{"s":{"type":"string"}},"additionalProperties":{"type":"string"}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
}

var flatInstances = []string{
	`{}`,
	`{"text":"hello"}`,
	`{"text":"hello","extra":1}`,
	`{"text":1}`,
	`{"text":null}`,
	`{"text":"a","text":"b"}`,
	`{"a":1,"b":2.5}`,
	`{"a":1.5,"b":2}`,
	`{"a":1e400,"b":2}`,
	`{"a":-0,"b":1E2,"s":null,"u":255}`,
	`{"a":3,"s":"x","u":256}`,
	`{"a":3,"s":"x","u":-1}`,
	`{"a":3,"s":"x","u":2.0}`,
	`{"a":3.0000000000000001,"s":"","u":0}`,
	`{"flag":true,"n":-5}`,
	`{"flag":"true"}`,
	`{"n":-6}`,
	`{"x":1}`,
	`{"x":1.5}`,
	`{"other":{"deep":[1,2,3]}}`,
	`{"other":[]}`,
	`{"t":["a"],"s":"ab"}`,
	`{"s":"a"}`,
	`{"s":"\u00e9\ud83d\ude00"}`,
	`{"text":"ok"} {}`,
	`{"text":"ok"`,
	`[]`,
	"{\"text\":\"\xff\"}",
}

func compileFor(t testing.TB, raw string) (*schema.Compiled, *flatSchema) {
	t.Helper()
	c, err := schema.Compile([]byte(raw), schema.CompileOptions{Label: "arguments"})
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return c, compileFlat(jsontext.Value(raw))
}

func TestFlatSchemaAcceptsOnlyValid(t *testing.T) {
	handled, accepted := 0, 0
	for _, raw := range flatSchemas {
		c, fs := compileFor(t, raw)
		if fs == nil {
			continue
		}
		handled++
		for _, inst := range flatInstances {
			if fs.accepts(jsontext.Value(inst)) {
				accepted++
				if err := c.ValidateJSON([]byte(inst)); err != nil {
					t.Errorf("schema %s: fast check accepted %s, validator says %v", raw, inst, err)
				}
			}
		}
	}
	if handled != 7 || accepted < 10 {
		t.Errorf("fast check handled %d schemas and accepted %d instances; want 7 and at least 10", handled, accepted)
	}
	// The inferred schemas of the bench tools take the fast path.
	s := newBenchServer(t)
	for _, name := range []string{"echo", "add"} {
		if st, _ := s.tools.get(name); st.flat == nil {
			t.Errorf("tool %s: no fast check for %s", name, st.tool.InputSchema)
		}
	}
}

func FuzzFlatSchema(f *testing.F) {
	for i := range flatSchemas {
		for _, inst := range flatInstances {
			f.Add(i, inst)
		}
	}
	compiled := make([]*schema.Compiled, len(flatSchemas))
	flats := make([]*flatSchema, len(flatSchemas))
	for i, raw := range flatSchemas {
		compiled[i], flats[i] = compileFor(f, raw)
	}
	f.Fuzz(func(t *testing.T, i int, inst string) {
		if i < 0 || i >= len(flats) || flats[i] == nil {
			return
		}
		if flats[i].accepts(jsontext.Value(inst)) {
			if err := compiled[i].ValidateJSON([]byte(inst)); err != nil {
				t.Fatalf("schema %s: fast check accepted %q, validator says %v", flatSchemas[i], inst, err)
			}
		}
	})
}
