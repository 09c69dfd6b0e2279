package everything

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// The add tool must not wrap around: a sum outside int64 is a tool error
// (isError), never a silently wrong number.
func TestAddOverflowIsToolError(t *testing.T) {
	c := connect(t)
	c.call(pmcp.MethodInitialize, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	for _, tc := range []struct {
		name, args string
		wantErr    bool
		wantText   string
	}{
		{"max", `{"a":9223372036854775806,"b":1}`, false, `{"sum":9223372036854775807}`},
		{"min", `{"a":-9223372036854775807,"b":-1}`, false, `{"sum":-9223372036854775808}`},
		{"mixed signs", `{"a":9223372036854775807,"b":-9223372036854775808}`, false, `{"sum":-1}`},
		{"positive overflow", `{"a":9223372036854775807,"b":1}`, true, "overflow"},
		{"negative overflow", `{"a":-9223372036854775808,"b":-1}`, true, "overflow"},
		{"both huge", `{"a":9223372036854775807,"b":9223372036854775807}`, true, "overflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.call(pmcp.MethodToolsCall, map[string]any{"name": "add", "arguments": jsontext.Value(tc.args)})
			isErr, _ := res["isError"].(bool)
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if isErr != tc.wantErr || !strings.Contains(text, tc.wantText) {
				t.Fatalf("add %s: isError=%v text=%q; want isError=%v and text containing %q (structured: %v)",
					tc.args, isErr, text, tc.wantErr, tc.wantText, res["structuredContent"])
			}
		})
	}
}
