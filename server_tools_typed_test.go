package pmcp

import (
	"context"
	stdjson "encoding/json"
	"fmt"
	"strings"
	"testing"
)

// typedEras are the two protocol eras as a third-party client speaks them
// over stdio: legacy with initialize, modern with per-request _meta.
var typedEras = []struct{ name, meta string }{
	{"legacy", ""},
	{"modern", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`},
}

// typedPeer starts s over stdio and, in the legacy era, initializes it.
// It returns a function sending one request and returning its response.
func typedPeer(t *testing.T, s *Server, meta string) func(method, params string) (map[string]any, string) {
	p := startStdioServer(t, s)
	if meta == "" {
		p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if m, line := p.next(); m["result"] == nil {
			t.Fatalf("initialize: %s", line)
		}
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	id := 0
	return func(method, params string) (map[string]any, string) {
		t.Helper()
		id++
		members := params
		if meta != "" {
			if members != "" {
				members += ","
			}
			members += meta
		}
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
		if members != "" {
			req += `,"params":{` + members + `}`
		}
		p.send(req + `,"x-extra":true}`)
		m, line := p.next()
		if m["id"] != float64(id) {
			t.Fatalf("%s: got %s", method, line)
		}
		return m, line
	}
}

type forecastArgs struct {
	City  string `json:"city" jsonschema:"description='City, country',minLength=2,pattern=^[A-Z]"`
	Days  int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=16,default=3"`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
}

// TestTypedToolTagKeywords: the keywords of jsonschema tags reach the
// inputSchema in tools/list, and tools/call enforces them, in both eras.
func TestTypedToolTagKeywords(t *testing.T) {
	for _, era := range typedEras {
		t.Run(era.name, func(t *testing.T) {
			s, err := NewServer(ServerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = AddTool(s, &Tool{Name: "forecast"}, func(ctx context.Context, e *RequestHandlerExtra, in forecastArgs) (string, error) {
				return fmt.Sprintf("%s %d %s", in.City, in.Days, in.Units), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			call := typedPeer(t, s, era.meta)
			_, line := call("tools/list", "")
			for _, want := range []string{`"description":"City, country"`, `"minLength":2`, `"pattern":"^[A-Z]"`, `"minimum":1`, `"maximum":16`, `"default":3`, `"enum":["metric","imperial"]`} {
				if !strings.Contains(line, want) {
					t.Errorf("tools/list lacks %s: %s", want, line)
				}
			}
			m, line := call("tools/call", `"name":"forecast","arguments":{"city":"Oslo","days":2,"units":"metric"}`)
			if getPath(m, "result", "isError") == true || !strings.Contains(line, `Oslo 2 metric`) {
				t.Fatalf("valid call: %s", line)
			}
			for _, bad := range []struct{ args, want string }{
				{`{"city":"O"}`, `property \"city\"`},
				{`{"city":"oslo"}`, `must match the pattern`},
				{`{"city":"Oslo","days":0}`, `property \"days\"`},
				{`{"city":"Oslo","days":17}`, `property \"days\"`},
				{`{"city":"Oslo","units":"kelvin"}`, `property \"units\"`},
			} {
				m, line := call("tools/call", `"name":"forecast","arguments":`+bad.args)
				if getPath(m, "result", "isError") != true || !strings.Contains(line, `invalid arguments for tool \"forecast\"`) || !strings.Contains(line, bad.want) {
					t.Errorf("arguments %s: got %s, want a tool error about %s", bad.args, line, bad.want)
				}
			}
		})
	}
}

type outMap map[string]int

type outStruct struct {
	N int `json:"n"`
}

// TestTypedToolOutputs: a typed tool whose output is a JSON object (a map,
// a named map, a struct) answers with structuredContent and lists an
// object outputSchema; other outputs are one text block without either
// (structuredContent must be an object), in both eras.
func TestTypedToolOutputs(t *testing.T) {
	type out struct {
		tool, schema, structured, text string // schema/structured "" = absent
	}
	wants := []out{
		{"anymap", `{"type":"object","additionalProperties":true}`, `{"n":1,"s":"x"}`, `{"n":1,"s":"x"}`},
		{"named", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"n":2}`, `{"n":2}`},
		{"struct", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`, `{"n":3}`, `{"n":3}`},
		{"ptrmap", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"n":4}`, `{"n":4}`},
		{"dynamic", "", `{"n":5}`, `{"n":5}`},
		{"dynamiclist", "", "", `[5]`},
		{"string", "", "", `plain text`},
		{"slice", "", "", `["a","b"]`},
		{"number", "", "", `42`},
	}
	for _, era := range typedEras {
		t.Run(era.name, func(t *testing.T) {
			s, err := NewServer(ServerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(AddTool(s, &Tool{Name: "anymap"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (map[string]any, error) {
				return map[string]any{"n": 1, "s": "x"}, nil
			}))
			must(AddTool(s, &Tool{Name: "named"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (outMap, error) {
				return outMap{"n": 2}, nil
			}))
			must(AddTool(s, &Tool{Name: "struct"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (outStruct, error) {
				return outStruct{N: 3}, nil
			}))
			must(AddTool(s, &Tool{Name: "ptrmap"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (*outMap, error) {
				return &outMap{"n": 4}, nil
			}))
			must(AddTool(s, &Tool{Name: "dynamic"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (any, error) {
				return outMap{"n": 5}, nil
			}))
			must(AddTool(s, &Tool{Name: "dynamiclist"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (any, error) {
				return []int{5}, nil
			}))
			must(AddTool(s, &Tool{Name: "string"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
				return "plain text", nil
			}))
			must(AddTool(s, &Tool{Name: "slice"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) ([]string, error) {
				return []string{"a", "b"}, nil
			}))
			must(AddTool(s, &Tool{Name: "number"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (int, error) {
				return 42, nil
			}))
			call := typedPeer(t, s, era.meta)
			list, _ := call("tools/list", "")
			schemas := map[string]string{}
			tools, _ := getPath(list, "result", "tools").([]any)
			for _, tl := range tools {
				tm := tl.(map[string]any)
				if os, ok := tm["outputSchema"]; ok {
					b, err := stdjson.Marshal(os)
					must(err)
					schemas[tm["name"].(string)] = sortedJSON(t, b)
				}
			}
			for _, w := range wants {
				if got := schemas[w.tool]; got != sortedJSON(t, []byte(w.schema)) {
					t.Errorf("%s: outputSchema %s, want %s", w.tool, got, w.schema)
				}
				m, line := call("tools/call", `"name":"`+w.tool+`"`)
				var structured string
				if sc, ok := getPath(m, "result").(map[string]any)["structuredContent"]; ok {
					b, err := stdjson.Marshal(sc)
					must(err)
					structured = sortedJSON(t, b)
				}
				if structured != sortedJSON(t, []byte(w.structured)) {
					t.Errorf("%s: structuredContent %q, want %q (%s)", w.tool, structured, w.structured, line)
				}
				content, _ := getPath(m, "result", "content").([]any)
				var text string
				if len(content) > 0 {
					text, _ = getPath(content[0].(map[string]any), "text").(string)
				}
				if strings.HasPrefix(text, "{") {
					text = sortedJSON(t, []byte(text))
				}
				if len(content) != 1 || text != w.text {
					t.Errorf("%s: content %v, want one text block %s", w.tool, content, w.text)
				}
			}
		})
	}
}

// sortedJSON re-encodes a JSON document deterministically ("" for
// an empty one).
func sortedJSON(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) == 0 {
		return ""
	}
	var v any
	if err := stdjson.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, err := stdjson.Marshal(v) // sorted keys
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
