package pmcp

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestOutgoingNameIsTargetName: the ClientRequest.Name a client
// middleware sees is read from the typed params when it can be; it must
// be what the scan of the marshaled params gives (targetName), whatever
// the method and the name's characters.
func TestOutgoingNameIsTargetName(t *testing.T) {
	names := []string{"", "echo", `quo"te`, `back\slash`, "é ü ✓", "tab\there", "\u2028", "<html>&"}
	for _, n := range names {
		meta := jsontext.Value(`{"name":"not this","uri":"nor this"}`)
		for _, c := range []struct {
			method string
			params any
		}{
			{MethodToolsCall, &CallToolParams{Name: n, Arguments: jsontext.Value(`{"name":"x"}`), Meta: meta}},
			{MethodPromptsGet, &GetPromptParams{Name: n, Arguments: map[string]string{"name": "x"}, Meta: meta}},
			{MethodResourcesRead, &ReadResourceParams{URI: n, Meta: meta}},
			{MethodResourcesSubscribe, &SubscribeParams{URI: n}},
			{MethodToolsList, &paginatedParams{Cursor: n}},
			// A method whose params are another method's type: the scan decides.
			{MethodResourcesRead, &CallToolParams{Name: n}},
			{MethodPromptsGet, &ReadResourceParams{URI: n}},
			{"x/unknown", &CallToolParams{Name: n}},
		} {
			raw, err := marshalParams(c.method, c.params)
			if err != nil {
				t.Fatal(err)
			}
			want := targetName(&jsonrpc.Request{Method: c.method, Params: raw}, nil)
			if got := outgoingName(c.method, c.params, raw); got != want {
				t.Errorf("%s %s: outgoingName %q, targetName %q", c.method, raw, got, want)
			}
		}
	}
}
