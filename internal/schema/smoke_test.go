package schema

import (
	"fmt"
	"testing"
)

type smokeAddr struct {
	Street string `json:"street" jsonschema:"street name"`
	Zip    string `json:"zip,omitempty"`
}
type smokeIn struct {
	A     int               `json:"a"`
	Name  string            `json:"name,omitempty"`
	Tags  []string          `json:"tags,omitempty"`
	Addr  *smokeAddr        `json:"addr,omitempty"`
	Meta  map[string]int    `json:"meta,omitempty"`
	Addrs []smokeAddr       `json:"addrs,omitempty"`
}

func TestSmoke(t *testing.T) {
	c, err := For[smokeIn](ForOptions{Label: "arguments"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(string(c.JSON()))
	for _, in := range []string{
		`{"a":"x"}`, `{}`, `{"a":1,"b":2}`, `{"a":1,"tags":["x",3]}`, `{"a":1,"meta":{"x":1,"y":"z"}}`,
		`{"a":1,"addrs":[{"street":"s"},{"street":1}]}`, `{"a":1,"addr":{"zip":"1"}}`, `{"a":1.5}`, `[1]`, `{"a":1,"a":2}`, `{"a":1}`,
	} {
		fmt.Printf("%s => %v\n", in, c.ValidateJSON([]byte(in)))
	}
	raw := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["zip"],"additionalProperties":false}},"properties":{"home":{"$ref":"#/$defs/address"},"x":{"anyOf":[{"type":"string"},{"type":"object","properties":{"b":{"type":"integer"}}}]},"e":{"enum":["a","b",3]},"n":{"type":"number","minimum":1},"s":{"type":"string","minLength":2}},"additionalProperties":{"type":"boolean"}}`
	c2, err := Compile([]byte(raw), CompileOptions{Label: "arguments"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"home":{"zip":"1234"}}`, `{"home":{}}`, `{"home":{"zip":"12345","q":1}}`, `{"x":{"b":"s"}}`, `{"e":"z"}`, `{"n":0}`, `{"s":"a"}`, `{"zz":1}`} {
		fmt.Printf("%s => %v\n", in, c2.ValidateJSON([]byte(in)))
	}
	for _, s := range []string{`{"$ref":"#","type":"object"}`, `{"type":"object","$ref":"https://example.com/x.json"}`, `{"type":"integer"}`, `{"type":"object","Properties":{}}`} {
		_, err := Compile([]byte(s), CompileOptions{})
		fmt.Println(s, "=>", err)
	}
	_, err = For[int](ForOptions{})
	fmt.Println(err)
}
