package schema

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func measure(t *testing.T, name, schema, inst string) {
	c, err := Compile([]byte(schema), CompileOptions{AllowNonObjectRoot: true, Limits: Limits{MaxValidationCost: 1 << 40, MaxInstanceBytes: 64 << 20}})
	if err != nil {
		t.Fatal(name, err)
	}
	v, err := decodeInstance([]byte(inst), c.limits)
	if err != nil {
		t.Fatal(err)
	}
	est := estimator{budget: 1e18}
	est.visit(v, c.g.root, 1)
	start := time.Now()
	err = c.validate(v)
	d := time.Since(start)
	es := fmt.Sprint(err)
	if len(es) > 80 {
		es = es[:80]
	}
	fmt.Printf("%-22s units=%10.0f time=%10v ns/unit=%6.1f err=%s\n", name, est.used, d, float64(d.Nanoseconds())/est.used, es)
}

func TestCalibrate(t *testing.T) {
	ints := "[" + strings.Repeat("1,", 300000) + "1]"
	measure(t, "ints/items", `{"items":{"type":"integer"}}`, ints)
	measure(t, "ints/items-fail-last", `{"items":{"type":"integer"}}`, "["+strings.Repeat("1,", 300000)+`"x"]`)
	objs := "[" + strings.Repeat(`{"a":1,"b":"x"},`, 50000) + `{"a":1,"b":"x"}]`
	measure(t, "objs/props", `{"items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}}`, objs)
	measure(t, "objs/anyOf", `{"items":{"anyOf":[{"type":"string"},{"type":"array"},{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}]}}`, objs)
	measure(t, "objs/anyOf-deep-fail", `{"items":{"anyOf":[{"type":"string"},{"type":"array"},{"properties":{"a":{"type":"string"}}},{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}]}}`, objs)
	measure(t, "objs/uneval", `{"items":{"allOf":[{"properties":{"a":true}}],"unevaluatedProperties":{"type":"string"}}}`, objs)
	// exponential in-place
	var defs []string
	for i := 0; i < 16; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d16":{"type":"integer"}`)
	measure(t, "exp-allOf-2^16", `{"$defs":{`+strings.Join(defs, ",")+`},"$ref":"#/$defs/d0"}`, `1`)
	measure(t, "exp-allOf-2^16-fail", `{"$defs":{`+strings.Join(defs, ",")+`},"anyOf":[{"$ref":"#/$defs/d0"},{"$ref":"#/$defs/d0"}]}`, `"x"`)
	big := `"` + strings.Repeat("ab", 1<<20) + `"`
	measure(t, "pattern-simple-2MB", `{"pattern":"^[ab]*$"}`, big)
	measure(t, "pattern-complex-2MB", `{"pattern":"(a|b|ab|ba|aab|abb)*(x|y)$"}`, big)
	measure(t, "pattern-fail-2MB", `{"pattern":"^x"}`, big)
	measure(t, "maxLength-fail-2MB", `{"maxLength":3}`, big)
	nested := strings.Repeat(`{"c":`, 100) + big + strings.Repeat(`}`, 100)
	measure(t, "deep-pattern-fail", `{"$defs":{"n":{"properties":{"c":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"string","maxLength":2}]}}}},"$ref":"#/$defs/n"}`, nested)
	enumSchema := `{"items":{"enum":[` + strings.Repeat(`"aaaaaaaaaa",`, 1000) + `"b"]}}`
	measure(t, "enum-1000", enumSchema, "["+strings.Repeat(`"b",`, 1000)+`"b"]`)
	measure(t, "unique", `{"uniqueItems":true}`, ints)
}

func TestCalibrateEstimator(t *testing.T) {
	ints := []byte("[" + strings.Repeat("1,", 300000) + "1]")
	c, _ := Compile([]byte(`{"items":{"type":"integer"}}`), CompileOptions{AllowNonObjectRoot: true, Limits: Limits{MaxValidationCost: 1 << 40}})
	start := time.Now()
	v, _ := decodeInstance(ints, c.limits)
	d1 := time.Since(start)
	start = time.Now()
	est := estimator{budget: 1e18}
	est.visit(v, c.g.root, 1)
	fmt.Println("decode", d1, "estimate", time.Since(start), est.used)
}
