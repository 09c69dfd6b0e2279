package pmcp

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestHTTPRepeatedMirroredHeaders: a mirrored header sent on more than one
// field line has a combined value (RFC 9110 §5.3) that matches no body
// value, even when the lines repeat the same value: it is refused.
func TestHTTPRepeatedMirroredHeaders(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	modernCall := modernBody(1, MethodToolsCall, map[string]any{"name": "hdr", "arguments": map[string]any{"region": "eu", "count": 7, "opts": map[string]any{"flag": true}}}, nil)
	good := func() http.Header {
		return modernHeaders(MethodToolsCall, "hdr", "Accept", "application/json",
			"Mcp-Param-Region", "eu", "Mcp-Param-Count", "7", "Mcp-Param-Flag", "true")
	}
	// The request is accepted with single headers.
	if r := readJSON(t, e.post(modernCall, good())); r.Error != nil {
		t.Fatalf("baseline refused: %+v", r.Error)
	}
	modernRepeats := []struct{ key, other string }{
		{"MCP-Protocol-Version", Version20251125},
		{"Mcp-Method", "tools/list"},
		{"Mcp-Name", "echo"},
		{"Mcp-Param-Region", "us"},
		{"Mcp-Param-Count", "8"},
		{"Mcp-Param-Flag", "false"},
	}
	for _, c := range modernRepeats {
		for _, second := range []string{"different", "same"} {
			t.Run("modern/"+c.key+"/"+second, func(t *testing.T) {
				h := good()
				v := c.other
				if second == "same" {
					v = h.Get(c.key)
				}
				h.Add(c.key, v)
				resp := e.post(modernCall, h)
				r := readJSON(t, resp)
				if resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32020 {
					t.Fatalf("status %d, %+v; want 400 with -32020", resp.StatusCode, r.Error)
				}
			})
		}
	}
	// Legacy (2025-11-25) mirrors only MCP-Protocol-Version.
	sid := e.initSession(nil)
	legacyCall := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	for _, second := range []string{Version20260728, Version20251125} {
		for _, m := range []struct {
			name, method, body string
			accept             string
		}{
			{"post", http.MethodPost, legacyCall, "application/json"},
			{"initialize", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "application/json"},
			{"notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "application/json"},
			{"get", http.MethodGet, "", "text/event-stream"},
			{"delete", http.MethodDelete, "", ""},
		} {
			t.Run("legacy/"+m.name+"/"+second, func(t *testing.T) {
				h := hdr("Accept", m.accept, "Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125)
				h.Add("MCP-Protocol-Version", second)
				var body any
				if m.body != "" {
					body = m.body
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				resp := e.do(ctx, m.method, body, h)
				r := readJSON(t, resp)
				if resp.StatusCode != http.StatusBadRequest || r.Error == nil {
					t.Fatalf("status %d, %+v; want 400", resp.StatusCode, r.Error)
				}
			})
		}
	}
	// The session is still usable with a single header.
	if r := readJSON(t, e.post(legacyCall, hdr("Accept", "application/json", "Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125))); r.Error != nil {
		t.Fatalf("%+v", r.Error)
	}
}
