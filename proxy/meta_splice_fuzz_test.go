package proxy

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// FuzzMetaScan checks the two scanners of a downstream request's bytes
// (metaMember, onlyManaged) against a full decode: whatever they accept
// decodes, names the same member, and splices into valid JSON.
func FuzzMetaScan(f *testing.F) {
	const key = pmcp.MetaClientCapabilities
	for _, s := range []string{
		`{"name":"x","arguments":{"_meta":{"` + key + `":1}},"_meta":{"a":2,"` + key + `": {"x" : [1]} ,"b":3}}`,
		`{"_meta":{"` + key + `":1},"_meta":{}}`,
		`{"\u005fmeta":{"` + key + `":1}}`,
		`{"_meta":{"progressToken":1,"io.modelcontextprotocol/clientInfo":{}}}`,
		`{"_meta":{"` + key + `":1},"arguments":{"s":"` + "\xff" + `"}}`,
		``, `[]`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		in := bytes.Clone(params)
		start, end, ok := metaMember(params, key)
		if !bytes.Equal(in, params) {
			t.Fatal("metaMember wrote its input")
		}
		var full struct {
			Meta map[string]jsontext.Value `json:"_meta"`
		}
		decodes := json.Unmarshal(params, &full) == nil
		if ok {
			v, has := full.Meta[key]
			if !decodes || !has {
				t.Fatalf("metaMember found %q in %q, which does not decode with it", params[start:end], params)
			}
			if got := jsontext.Value(bytes.Clone(params[start:end])); got.Canonicalize() != nil || v.Canonicalize() != nil || !bytes.Equal(got, v) {
				t.Fatalf("metaMember found %q, the decoder %q", params[start:end], v)
			}
			if out := spliceValue(params, start, end, []byte(`{}`)); !out.IsValid() {
				t.Fatalf("spliced %q is not valid JSON", out)
			}
		}
		if onlyManaged(params) {
			var m map[string]jsontext.Value
			if json.Unmarshal(params, &m) != nil {
				t.Fatalf("onlyManaged accepted %q, which does not decode", params)
			}
			for k := range m {
				if k != "progressToken" && !bytes.HasPrefix([]byte(k), []byte("io.modelcontextprotocol/")) {
					t.Fatalf("onlyManaged accepted member %q of %q", k, params)
				}
			}
		}
	})
}

// FuzzValidatedManaged: on every valid JSON value, validatedManaged (the
// walk by delimiters of a _meta the server validated) answers as
// onlyManaged (the strict one); on any other input it returns, in bounds.
func FuzzValidatedManaged(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `{"progressToken":1}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":[1,{"b":"}"}]},"io.modelcontextprotocol/clientInfo":{"name":"n\"}","version":"1"}}`,
		`{"progressToken":1,"x.y/z":{"io.modelcontextprotocol/a":1}}`,
		`{"io.modelcontextprotocol\/x":1}`,
		`{"a":"\\","progressToken":true}`,
		`{ "progressToken" : null , "io.modelcontextprotocol/x" : -1.5e3 }`,
		`null`, `[]`, `5`, `{"progressToken":1} x`, `{"progressToken":`, `{"progressToken"`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		got := validatedManaged(meta)
		if !jsontext.Value(meta).IsValid() {
			return
		}
		if want := onlyManaged(meta); got != want {
			t.Fatalf("validatedManaged(%q) = %v, onlyManaged %v", meta, got, want)
		}
	})
}
