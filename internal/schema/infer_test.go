package schema

import (
	stdjson "encoding/json"
	"errors"
	"math/big"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

type address struct {
	Street string `json:"street" jsonschema:"the street and number"`
	City   string `json:"city"`
	Zip    string `json:"zip,omitempty"`
}

type person struct {
	Name     string             `json:"name" jsonschema:"full name"`
	Age      int                `json:"age,omitempty"`
	Height   float64            `json:"height,omitzero"`
	Nick     *string            `json:"nick"`
	Home     address            `json:"home"`
	Work     *address           `json:"work,omitempty"`
	Tags     []string           `json:"tags,omitempty"`
	Scores   map[string]int     `json:"scores,omitempty"`
	Born     time.Time          `json:"born"`
	Avatar   []byte             `json:"avatar,omitempty"`
	Pair     [2]int8            `json:"pair"`
	Any      any                `json:"any,omitempty"`
	Raw      stdjson.RawMessage `json:"raw,omitempty"`
	IP       netip.Addr         `json:"ip,omitzero"`
	Big      *big.Int           `json:"big,omitempty"`
	Ignored  string             `json:"-"`
	Dash     string             `json:"-,omitempty"`
	Untagged bool
	private  int
}

type base struct {
	ID      string `json:"id"`
	Created string `json:"created,omitempty"`
}

type withEmbedded struct {
	base
	Title string `json:"title"`
}

func TestForInference(t *testing.T) {
	tests := []struct {
		name string
		c    func() (*Compiled, error)
		want string
	}{
		{
			"struct",
			func() (*Compiled, error) { return For[address](ForOptions{}) },
			`{"type":"object","properties":{"street":{"type":"string","description":"the street and number"},"city":{"type":"string"},"zip":{"type":"string"}},"required":["street","city"],"additionalProperties":false}`,
		},
		{
			"pointer root is its element",
			func() (*Compiled, error) { return For[*address](ForOptions{}) },
			`{"type":"object","properties":{"street":{"type":"string","description":"the street and number"},"city":{"type":"string"},"zip":{"type":"string"}},"required":["street","city"],"additionalProperties":false}`,
		},
		{
			"embedded struct fields are promoted",
			func() (*Compiled, error) { return For[withEmbedded](ForOptions{}) },
			`{"type":"object","properties":{"id":{"type":"string"},"created":{"type":"string"},"title":{"type":"string"}},"required":["id","title"],"additionalProperties":false}`,
		},
		{
			"any",
			func() (*Compiled, error) { return For[any](ForOptions{}) },
			`{"type":"object"}`,
		},
		{
			"map",
			func() (*Compiled, error) { return For[map[string]any](ForOptions{}) },
			`{"type":"object","additionalProperties":true}`,
		},
		{
			"typed map",
			func() (*Compiled, error) { return For[map[string][]int](ForOptions{}) },
			`{"type":"object","additionalProperties":{"type":["null","array"],"items":{"type":"integer"}}}`,
		},
		{
			"empty struct",
			func() (*Compiled, error) { return For[struct{}](ForOptions{}) },
			`{"type":"object"}`,
		},
		{
			"type override",
			func() (*Compiled, error) {
				type T struct {
					D time.Duration `json:"d"`
				}
				return For[T](ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
					reflect.TypeFor[time.Duration](): {Type: "string", Pattern: `^[0-9]+(ns|us|ms|s|m|h)$`},
				}})
			},
			`{"type":"object","properties":{"d":{"type":"string","pattern":"^[0-9]+(ns|us|ms|s|m|h)$"}},"required":["d"],"additionalProperties":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.c()
			if err != nil {
				t.Fatal(err)
			}
			if got := string(c.JSON()); got != tt.want {
				t.Errorf("JSON() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestForPersonProperties checks the property schemas of a struct using most
// supported field kinds, and which properties are required.
func TestForPersonProperties(t *testing.T) {
	c, err := For[person](ForOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type                 string                    `json:"type"`
		Properties           map[string]jsontext.Value `json:"properties"`
		Required             []string                  `json:"required"`
		AdditionalProperties bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(c.JSON(), &got); err != nil {
		t.Fatal(err)
	}
	wantProps := map[string]string{
		"name":     `{"type":"string","description":"full name"}`,
		"age":      `{"type":"integer"}`,
		"height":   `{"type":"number"}`,
		"nick":     `{"type":["null","string"]}`,
		"home":     `{"type":"object","properties":{"street":{"type":"string","description":"the street and number"},"city":{"type":"string"},"zip":{"type":"string"}},"required":["street","city"],"additionalProperties":false}`,
		"work":     `{"type":["null","object"],"properties":{"street":{"type":"string","description":"the street and number"},"city":{"type":"string"},"zip":{"type":"string"}},"required":["street","city"],"additionalProperties":false}`,
		"tags":     `{"type":["null","array"],"items":{"type":"string"}}`,
		"scores":   `{"type":"object","additionalProperties":{"type":"integer"}}`,
		"born":     `{"type":"string","format":"date-time"}`,
		"avatar":   `{"type":"string","contentEncoding":"base64"}`,
		"pair":     `{"type":"array","items":{"type":"integer","minimum":-128,"maximum":127},"minItems":2,"maxItems":2}`,
		"any":      `true`,
		"raw":      `true`,
		"ip":       `{"type":"string"}`,
		"big":      `{"type":["null","integer"]}`,
		"-":        `{"type":"string"}`,
		"Untagged": `{"type":"boolean"}`,
	}
	if len(got.Properties) != len(wantProps) {
		t.Errorf("got %d properties, want %d: %s", len(got.Properties), len(wantProps), c.JSON())
	}
	for name, want := range wantProps {
		if g := string(got.Properties[name]); g != want {
			t.Errorf("property %q = %s, want %s", name, g, want)
		}
	}
	wantRequired := []string{"name", "nick", "home", "born", "pair", "Untagged"}
	if !reflect.DeepEqual(got.Required, wantRequired) {
		t.Errorf("required = %q, want %q", got.Required, wantRequired)
	}
	if got.Type != "object" || got.AdditionalProperties {
		t.Errorf("type = %q, additionalProperties = %v", got.Type, got.AdditionalProperties)
	}
}

// TestForRoundTrip checks that what json v2 encodes from a typed value
// validates against the inferred schema, and that valid arguments decode into
// the type.
func TestForRoundTrip(t *testing.T) {
	c, err := For[person](ForOptions{Label: "structuredContent"})
	if err != nil {
		t.Fatal(err)
	}
	nick := "al"
	values := []person{
		{},
		{Name: "Al", Nick: &nick, Tags: []string{"a"}, Scores: map[string]int{"x": 1}, Avatar: []byte{1, 2, 3},
			Work: &address{Street: "s", City: "c"}, IP: netip.MustParseAddr("127.0.0.1"), Big: big.NewInt(7),
			Born: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Raw: stdjson.RawMessage(`{"x":[1]}`), Any: []any{1.0}},
	}
	for i, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ValidateJSON(data); err != nil {
			t.Errorf("value %d: ValidateJSON(%s) = %v", i, data, err)
		}
		if err := c.Validate(v); err != nil {
			t.Errorf("value %d: Validate(typed) = %v", i, err)
		}
		var back person
		if err := json.Unmarshal(data, &back); err != nil {
			t.Errorf("value %d: unmarshal: %v", i, err)
		}
	}
}

func TestForRejects(t *testing.T) {
	type withDuration struct {
		D time.Duration `json:"d"`
	}
	type withStringOpt struct {
		N int `json:"n,string"`
	}
	type withEmbedOpt struct {
		A address `json:",embed"`
	}
	type withFormat struct {
		T time.Time `json:"t,format:unix"`
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	type withNamedEmbedded struct {
		address `json:"addr"`
	}
	type withIntKeys struct {
		M map[int]string `json:"m"`
	}
	type recursive struct {
		Next *recursive `json:"next,omitempty"`
	}
	tests := []struct {
		name string
		c    func() (*Compiled, error)
		want string
	}{
		{"int", func() (*Compiled, error) { return For[int](ForOptions{}) }, `root must have type "object", but int is integer`},
		{"slice", func() (*Compiled, error) { return For[[]string](ForOptions{}) }, `but []string is array or null`},
		{"string", func() (*Compiled, error) { return For[string](ForOptions{}) }, `but string is string`},
		{"duration", func() (*Compiled, error) { return For[withDuration](ForOptions{}) }, "time.Duration has no default JSON representation"},
		{"string option", func() (*Compiled, error) { return For[withStringOpt](ForOptions{}) }, `json tag option "string" is not supported`},
		{"embed option", func() (*Compiled, error) { return For[withEmbedOpt](ForOptions{}) }, `json tag option "embed" is not supported`},
		{"format option", func() (*Compiled, error) { return For[withFormat](ForOptions{}) }, `json tag option "format:unix" is not supported`},
		{"chan", func() (*Compiled, error) { return For[withChan](ForOptions{}) }, "unsupported"},
		{"named embedded", func() (*Compiled, error) { return For[withNamedEmbedded](ForOptions{}) }, "embedded field with a json tag"},
		{"int keys", func() (*Compiled, error) { return For[withIntKeys](ForOptions{}) }, "unsupported map key type"},
		{"recursive", func() (*Compiled, error) { return For[recursive](ForOptions{}) }, "cycle"},
		{"custom marshaler", func() (*Compiled, error) { return For[struct{ V customJSON }](ForOptions{}) }, "has a MarshalJSON method"},
		{"nil type", func() (*Compiled, error) { return ForType(nil, ForOptions{}) }, "nil type"},
		{"trailing comma", func() (*Compiled, error) {
			return For[struct {
				A int `json:"a,"`
			}](ForOptions{})
		}, "malformed json tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.c()
			if err == nil {
				t.Fatalf("got schema %s, want error", c.JSON())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

type customJSON struct{ x int }

func (c customJSON) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

func TestForCustomMarshalerOverride(t *testing.T) {
	type T struct {
		V customJSON `json:"v"`
	}
	c, err := For[T](ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[customJSON](): {Type: "string"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(T{}); err != nil {
		t.Errorf("Validate = %v", err)
	}
}

func TestForValidation(t *testing.T) {
	c, err := For[person](ForOptions{Label: "arguments"})
	if err != nil {
		t.Fatal(err)
	}
	const valid = `{"name":"Al","nick":null,"home":{"street":"s","city":"c"},"born":"2025-01-01T00:00:00Z","pair":[1,2],"Untagged":true}`
	if err := c.ValidateJSON([]byte(valid)); err != nil {
		t.Fatalf("ValidateJSON(valid) = %v", err)
	}
	edit := func(old, new string) string { return strings.Replace(valid, old, new, 1) }
	tests := []struct{ in, want string }{
		{edit(`"name":"Al"`, `"name":1`), `arguments: property "name": expected string, got integer`},
		{edit(`"name":"Al",`, ``), `arguments: missing required property "name"`},
		{edit(`"nick":null`, `"nick":null,"extra":1`), `arguments: unexpected property "extra"`},
		{edit(`"city":"c"`, `"city":"c","zip":5`), `arguments: property "home.zip": expected string, got integer`},
		{edit(`"street":"s",`, ``), `arguments: property "home": missing required property "street"`},
		{edit(`"pair":[1,2]`, `"pair":[1,200]`), `arguments: property "pair[1]": must be <= 127 (got 200)`},
		{edit(`"pair":[1,2]`, `"pair":[1]`), `arguments: property "pair": must have at least 2 items (got 1)`},
		{edit(`"nick":null`, `"nick":null,"age":1.5`), `arguments: property "age": expected integer, got number`},
		{edit(`"nick":null`, `"nick":null,"tags":["a",{}]`), `arguments: property "tags[1]": expected string, got object`},
		{edit(`"nick":null`, `"nick":null,"scores":{"a":1,"b":true}`), `arguments: property "scores.b": expected integer, got boolean`},
		{edit(`"nick":null`, `"nick":null,"work":{"street":"s","city":"c","x":1}`), `arguments: property "work": unexpected property "x"`},
		{edit(`"nick":null`, `"nick":[]`), `arguments: property "nick": expected string or null, got array`},
		{`[]`, `arguments: expected object, got array`},
	}
	for _, tt := range tests {
		err := c.ValidateJSON([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ValidateJSON(%s)\n got %v\nwant %s", tt.in, err, tt.want)
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Label != "arguments" || len(ve.Errors) != 1 {
			t.Errorf("error %#v is not a single-message *ValidationError", err)
		}
	}
}
