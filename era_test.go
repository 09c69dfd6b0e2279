package pmcp

import (
	"net/http"
	"strings"
	"testing"
)

// TestEraHeaderOnlyMessage: a POST that only its MCP-Protocol-Version
// header makes modern (classify, case 3) is refused with -32602 pointing
// at initialize, as before the era was decided once; one whose body names
// client capabilities but no version gets the plain message.
func TestEraHeaderOnlyMessage(t *testing.T) {
	e := newHTTPEnv(t, newTestServerT(t), nil)
	for _, c := range []struct {
		body string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "send initialize to open a legacy session"},
		{`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, `missing required _meta "io.modelcontextprotocol/protocolVersion"`},
	} {
		resp := e.post(c.body, hdr("Accept", acceptBoth, "MCP-Protocol-Version", Version20260728, "Mcp-Method", MethodPing))
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d", c.body, resp.StatusCode)
		}
		r := readJSON(t, resp)
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, c.want) {
			t.Errorf("%s: error %+v, want -32602 with %q", c.body, r.Error, c.want)
		}
		if strings.Contains(c.body, "clientCapabilities") && strings.Contains(r.Error.Message, "initialize") {
			t.Errorf("%s: message %q points at initialize", c.body, r.Error.Message)
		}
	}
}
