package pmcp

import (
	"bytes"
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
						op, ok := encodeCallTool(name, a, r, st, m)
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
	if _, ok := encodeCallTool("\xff", nil, nil, nil, nil); ok {
		t.Error("a name of invalid UTF-8 was encoded: Marshal refuses it")
	}
	if n < 500 {
		t.Fatalf("only %d cases compared", n)
	}
}
