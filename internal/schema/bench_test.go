package schema

import (
	"testing"

	"github.com/go-json-experiment/json"
)

type benchArgs struct {
	Query string   `json:"query" jsonschema:"the search query"`
	Limit int      `json:"limit,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Exact bool     `json:"exact,omitempty"`
}

var benchValid = []byte(`{"query":"weather in Paris","limit":10,"tags":["news","eu"],"exact":false}`)

// BenchmarkValidateSmallObject measures the per-call cost of validating
// typical tool arguments from bytes (decode + estimate + validate).
func BenchmarkValidateSmallObject(b *testing.B) {
	c, err := For[benchArgs](ForOptions{Label: "arguments"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchValid)))
	for b.Loop() {
		if err := c.ValidateJSON(benchValid); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateSmallObjectDecoded validates an already-decoded value
// (which is converted to the validator's representation first).
func BenchmarkValidateSmallObjectDecoded(b *testing.B) {
	c, err := For[benchArgs](ForOptions{Label: "arguments"})
	if err != nil {
		b.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(benchValid, &v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateSmallObjectInvalid measures the failure path, which
// builds the explanation.
func BenchmarkValidateSmallObjectInvalid(b *testing.B) {
	c, err := For[benchArgs](ForOptions{Label: "arguments"})
	if err != nil {
		b.Fatal(err)
	}
	in := []byte(`{"query":"weather in Paris","limit":10,"tags":["news",7]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.ValidateJSON(in); err == nil {
			b.Fatal("valid")
		}
	}
}

// BenchmarkDecodeAndUnmarshal is the SDK's full per-call argument path for a
// typed tool: validate, then decode into the Go type.
func BenchmarkDecodeAndUnmarshal(b *testing.B) {
	c, err := For[benchArgs](ForOptions{Label: "arguments"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.ValidateJSON(benchValid); err != nil {
			b.Fatal(err)
		}
		var a benchArgs
		if err := json.Unmarshal(benchValid, &a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFor measures inference and compilation (done once per tool).
func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := For[benchArgs](ForOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
