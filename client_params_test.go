package pmcp

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestEncodeCallToolAsMarshal: the tools/call params the client encodes
// without reflection are byte for byte what Marshal writes for the same
// CallToolParams, for members as the client produces them (its own
// encodings of the arguments, input responses and _meta), and the name
// Marshal refuses is left to Marshal.
func TestEncodeCallToolAsMarshal(t *testing.T) {
	enc := func(v any) jsontext.Value {
		t.Helper()
		if v == nil {
			return nil
		}
		b, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	str := func(s string) *string { return &s }
	argsOf := func(v any) jsontext.Value {
		t.Helper()
		a, err := encodeArguments(v)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	names := []string{"echo", "", "a\"b\\c", "é ü \u2028 <&>", "tab\there", "\x01"}
	args := []jsontext.Value{
		nil,
		argsOf(nil),
		argsOf(map[string]any{}),
		argsOf(jsontext.Value(`{ }`)),
		argsOf(jsontext.Value(`{ "text" : "hello", "n": 1.50, "u": "\u0041\u00e9" }`)),
		argsOf(map[string]any{"b": []any{}, "a": map[string]any{}, "s": ""}),
		argsOf(struct {
			X string `json:"x"`
		}{"<html>"}),
	}
	responses := []jsontext.Value{nil, enc(map[string]any{}), enc(map[string]any{"k": map[string]any{"action": "accept"}})}
	states := []*string{nil, str(""), str("opaque \"state\"")}
	metas := []jsontext.Value{nil, jsontext.Value("{}"), enc(map[string]any{"progressToken": 7, MetaProtocolVersion: Version20260728, "x": []any{1, "two"}})}
	n := 0
	for _, name := range names {
		for _, a := range args {
			for _, r := range responses {
				for _, st := range states {
					for _, m := range metas {
						want, werr := Marshal(&CallToolParams{Name: name, Arguments: a, InputResponses: r, RequestState: st, Meta: m})
						op, ok := encodeCallTool(name, a, r, st, m, "")
						if werr != nil {
							if ok {
								t.Errorf("name %q: Marshal fails (%v), the direct encoding does not: %s", name, werr, op.raw)
							}
							continue
						}
						if !ok {
							t.Errorf("name %q args %s: the direct encoding gave up, Marshal wrote %s", name, a, want)
							continue
						}
						if !bytes.Equal(op.raw, want) || op.name != name {
							t.Errorf("direct %s (name %q)\nwant   %s", op.raw, op.name, want)
						}
						n++
					}
				}
			}
		}
	}
	if _, ok := encodeCallTool("\xff", nil, nil, nil, nil, ""); ok {
		t.Error("a name of invalid UTF-8 was encoded: Marshal refuses it")
	}
	if n < 500 {
		t.Fatalf("only %d cases compared", n)
	}
}

// TestOwnHeadersAsMirrored: the mirrored headers of tools/call params the
// client encoded itself, built from what it encoded them of (ownHeaders),
// are the headers read back from the params (mirroredHeaders), bindings
// and odd names included, in both eras.
func TestOwnHeadersAsMirrored(t *testing.T) {
	bs, err := paramBindingsOf(jsontext.Value(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"priority":{"type":"integer","x-mcp-header":"Priority"},
		"nested":{"type":"object","properties":{"on":{"type":"boolean","x-mcp-header":"On"}}}}}`))
	if err != nil || len(bs) != 3 {
		t.Fatalf("bindings %v, %v", bs, err)
	}
	bindings := func(tool string) []paramBinding {
		if tool == "bound" {
			return bs
		}
		return nil
	}
	modernMeta := jsontext.Value(`{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"` + Version20260728 + `","progressToken":3}`)
	oddMeta := jsontext.Value(`{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}`)
	args := []jsontext.Value{nil, jsontext.Value(`{"region":"eu west","priority":3,"nested":{"on":true}}`), jsontext.Value(`{"region":"é","priority":null}`)}
	n := 0
	for _, meta := range []jsontext.Value{modernMeta, oddMeta, jsontext.Value(`{"progressToken":1}`), nil} {
		for _, name := range []string{"bound", "plain", "", "é ü", "=?base64?x?="} {
			for _, a := range args {
				var rp reqParams
				rp.scan(jsontext.Value(`{"_meta":` + string(orNull(meta)) + `}`))
				op, ok := encodeCallTool(name, a, nil, nil, meta, metaVersion(rp.version))
				if !ok {
					t.Fatalf("%q: not encoded", name)
				}
				want, _, wantModern := mirroredHeaders(MethodToolsCall, op.raw, bindings)
				got, modern := ownHeaders(MethodToolsCall, op, bindings)
				if modern != wantModern || !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\nown headers %v (modern %v)\nread back   %v (modern %v)", op.raw, got, modern, want, wantModern)
				}
				n++
			}
		}
	}
	if n != 60 {
		t.Fatalf("%d cases", n)
	}
}

func orNull(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return jsontext.Value("null")
	}
	return v
}
