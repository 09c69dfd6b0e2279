package schema

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// tagged uses every key of the jsonschema tag grammar.
type tagged struct {
	City  string   `json:"city" jsonschema:"title=City,description='The city, or town',minLength=1,maxLength=40,pattern=^[A-Z],example=Paris,example=Oslo"`
	Units string   `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial,default=metric"`
	Days  int      `json:"days,omitempty" jsonschema:"minimum=1, maximum=16, default=3"`
	Temp  float64  `json:"temp,omitzero" jsonschema:"exclusiveMinimum=-273.15,exclusiveMaximum=1e4"`
	Level *int8    `json:"level,omitempty" jsonschema:"enum=1,enum=2,enum=3"`
	Email string   `json:"email,omitempty" jsonschema:"format=email,description=who to notify"`
	Plain string   `json:"plain,omitempty" jsonschema:"just a description, with commas = fine"`
	Loud  bool     `json:"loud,omitempty" jsonschema:"default=false"`
	Tags  []string `json:"tags,omitempty" jsonschema:"default='[\"a\",\"b\"]'"`
	Quote string   `json:"quote,omitempty" jsonschema:"description='it''s, quoted'"`
	Inner *tagged2 `json:"inner,omitempty"`
	Name  string   `json:"name,omitempty" jsonschema:"description='Surname, given names',pattern='^[A-Za-z'' ,-]+$'"`
}

type tagged2 struct {
	N uint `json:"n" jsonschema:"maximum=9"`
}

func TestTagKeywordsWire(t *testing.T) {
	c, err := For[tagged](ForOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(c.JSON(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"city":  `{"type":"string","title":"City","description":"The city, or town","minLength":1,"maxLength":40,"pattern":"^[A-Z]","examples":["Paris","Oslo"]}`,
		"units": `{"type":"string","enum":["metric","imperial"],"default":"metric"}`,
		"days":  `{"type":"integer","minimum":1,"maximum":16,"default":3}`,
		"temp":  `{"type":"number","exclusiveMinimum":-273.15,"exclusiveMaximum":10000}`,
		"level": `{"type":["null","integer"],"minimum":-128,"maximum":127,"enum":[1,2,3,null]}`,
		"email": `{"type":"string","format":"email","description":"who to notify"}`,
		"plain": `{"type":"string","description":"just a description, with commas = fine"}`,
		"loud":  `{"type":"boolean","default":false}`,
		"tags":  `{"type":["null","array"],"items":{"type":"string"},"default":["a","b"]}`,
		"quote": `{"type":"string","description":"it's, quoted"}`,
		"name":  `{"type":"string","description":"Surname, given names","pattern":"^[A-Za-z' ,-]+$"}`,
		"inner": `{"type":["null","object"],"properties":{"n":{"type":"integer","minimum":0,"maximum":9}},"required":["n"],"additionalProperties":false}`,
	}
	for name, w := range want {
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Properties[name], wv) {
			b, _ := json.Marshal(got.Properties[name])
			t.Errorf("property %q:\n got %s\nwant %s", name, b, w)
		}
	}
	// A tag without keys is unchanged: the schema of a type without
	// keyword tags is byte-identical to jsonschema-go's.
	a, err := For[address](ForOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := `{"type":"object","properties":{"street":{"type":"string","description":"the street and number"},"city":{"type":"string"},"zip":{"type":"string"}},"required":["street","city"],"additionalProperties":false}`; string(a.JSON()) != w {
		t.Errorf("untagged schema changed: %s", a.JSON())
	}
}

func TestTagKeywordsValidate(t *testing.T) {
	c, err := For[tagged](ForOptions{Label: "arguments"})
	if err != nil {
		t.Fatal(err)
	}
	const valid = `{"city":"Paris","units":"metric","days":3,"temp":20.5,"level":2,"email":"not checked","tags":["x"],"inner":{"n":9}}`
	if err := c.ValidateJSON([]byte(valid)); err != nil {
		t.Fatalf("ValidateJSON(valid) = %v", err)
	}
	if err := c.ValidateJSON([]byte(`{"city":"Oslo","level":null}`)); err != nil {
		t.Fatalf("null for a pointer field with enum: %v", err)
	}
	tests := []struct{ key, in, want string }{
		{"minLength", `{"city":""}`, `property "city"`},
		{"maxLength", `{"city":"A` + strings.Repeat("x", 40) + `"}`, `property "city"`},
		{"pattern", `{"city":"paris"}`, `property "city": must match the pattern "^[A-Z]"`},
		{"enum", `{"city":"P","units":"kelvin"}`, `property "units"`},
		{"enum pointer", `{"city":"P","level":4}`, `property "level"`},
		{"minimum", `{"city":"P","days":0}`, `property "days"`},
		{"maximum", `{"city":"P","days":17}`, `property "days"`},
		{"exclusiveMinimum", `{"city":"P","temp":-273.15}`, `property "temp"`},
		{"exclusiveMaximum", `{"city":"P","temp":10000}`, `property "temp"`},
		{"nested maximum", `{"city":"P","inner":{"n":10}}`, `property "inner.n"`},
	}
	for _, tt := range tests {
		err := c.ValidateJSON([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: ValidateJSON(%s) = %v, want an error about %s", tt.key, tt.in, err, tt.want)
		}
	}
}

func TestTagKeywordsRejected(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"minimum on a string", reflect.TypeFor[struct {
			S string `jsonschema:"minimum=1"`
		}](), `minimum applies to integer or number properties, not string`},
		{"non-numeric minimum", reflect.TypeFor[struct {
			N int `jsonschema:"minimum=abc"`
		}](), `minimum: "abc" is not a number`},
		{"non-numeric exclusiveMaximum", reflect.TypeFor[struct {
			N float64 `jsonschema:"exclusiveMaximum=1,5"`
		}](), `item "5" is not KEY=VALUE`},
		{"bad pattern", reflect.TypeFor[struct {
			S string `jsonschema:"pattern=[a-"`
		}](), `pattern: "[a-" is not a valid regular expression`},
		{"pattern on an int", reflect.TypeFor[struct {
			N int `jsonschema:"pattern=^1"`
		}](), `pattern applies to string properties, not integer`},
		{"enum not of the type", reflect.TypeFor[struct {
			N int `jsonschema:"enum=1,enum=two"`
		}](), `enum: "two" is not an integer`},
		{"enum out of range", reflect.TypeFor[struct {
			N uint8 `jsonschema:"enum=256"`
		}](), `enum: 256 does not fit the property`},
		{"default not of the type", reflect.TypeFor[struct {
			B bool `jsonschema:"default=yes"`
		}](), `default: "yes" is not a boolean`},
		{"default fraction on an int", reflect.TypeFor[struct {
			N int `jsonschema:"default=1.5"`
		}](), `default: "1.5" is not an integer`},
		{"default outside the tag's own bounds", reflect.TypeFor[struct {
			N int `jsonschema:"minimum=1,default=0"`
		}](), `default: 0 does not fit the property`},
		{"example not JSON", reflect.TypeFor[struct {
			L []string `jsonschema:"example=[a]"`
		}](), `example: "[a]" is not JSON`},
		{"negative minLength", reflect.TypeFor[struct {
			S string `jsonschema:"minLength=-1"`
		}](), `minLength: "-1" is not a non-negative integer`},
		{"maxLength on a slice", reflect.TypeFor[struct {
			L []string `jsonschema:"maxLength=3"`
		}](), `maxLength applies to string properties, not array`},
		{"format on a number", reflect.TypeFor[struct {
			F float64 `jsonschema:"format=email"`
		}](), `format applies to string properties, not number`},
		{"unknown key", reflect.TypeFor[struct {
			S string `jsonschema:"color=red"`
		}](), `unknown key "color"`},
		{"repeated key", reflect.TypeFor[struct {
			N int `jsonschema:"minimum=1,minimum=2"`
		}](), `minimum is given twice`},
		{"unterminated quote", reflect.TypeFor[struct {
			S string `jsonschema:"description='abc"`
		}](), `unterminated quoted value`},
		{"text after a quoted value", reflect.TypeFor[struct {
			S string `jsonschema:"description='a'b"`
		}](), `text after the closing quote`},
		{"missing key", reflect.TypeFor[struct {
			S string `jsonschema:"title=a,b"`
		}](), `item "b" is not KEY=VALUE`},
		{"empty value", reflect.TypeFor[struct {
			N int `jsonschema:"minimum="`
		}](), `minimum: "" is not a number`},
		{"nested field", reflect.TypeFor[struct {
			In []struct {
				S string `jsonschema:"minLength=x"`
			} `json:"in"`
		}](), `.In[].S: jsonschema tag "minLength=x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ForType(tt.typ, ForOptions{})
			if err == nil {
				t.Fatalf("got schema %s, want an error", c.JSON())
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\ndoes not contain %q", msg, tt.want)
			}
			if !strings.Contains(msg, TagGrammar) {
				t.Errorf("error %q does not show the tag grammar", msg)
			}
		})
	}
}

type tagBase struct {
	ID string `json:"id" jsonschema:"pattern=^[0-9]+$"`
}

type TagMeta struct {
	Note string `json:"note,omitempty" jsonschema:"maxLength=5"`
}

func (TagMeta) String() string { return "" }

type taggedEmbedded struct {
	tagBase
	*TagMeta
	Title string `json:"title" jsonschema:"the title"`
}

// Keyword tags of embedded structs (unexported, or with methods) reach the
// promoted properties; everything else is inferred as without them.
func TestTagKeywordsEmbedded(t *testing.T) {
	c, err := For[taggedEmbedded](ForOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"object","properties":{"id":{"type":"string","pattern":"^[0-9]+$"},"note":{"type":"string","maxLength":5},"title":{"type":"string","description":"the title"}},"required":["id","title"],"additionalProperties":false}`
	if string(c.JSON()) != want {
		t.Errorf("got  %s\nwant %s", c.JSON(), want)
	}
}

// parseTag never panics and yields only known keys.
func FuzzParseTag(f *testing.F) {
	for _, s := range []string{"minimum=1", "description='a, b',enum=x", "enum=a,enum=b", "title='it''s'", "'", "a=", "=,", "pattern='", "format=x, "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ft := &fieldTag{raw: s}
		if parseTag(ft) != nil {
			return
		}
		for _, it := range ft.items {
			if !slices.Contains(tagKeys, it.key) {
				t.Fatalf("%q: unknown key %q accepted", s, it.key)
			}
		}
	})
}
