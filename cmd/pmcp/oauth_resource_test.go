package main

import "testing"

// pmcp logout matches stored credentials by the SDK's one canonical
// resource rule (package oauth), the rule the server checks token
// audiences by: a trailing slash names another resource, a default port
// or the case of scheme and host does not.
func TestLogoutMatchesCanonicalResource(t *testing.T) {
	for _, c := range []struct {
		stored, given string
		same          bool
	}{
		{"https://mcp.example.com/mcp", "HTTPS://MCP.example.com:443/mcp", true},
		{"https://mcp.example.com", "https://mcp.example.com/", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp/", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", false},
		{"not a url", "not a url", true},
	} {
		if got := sameResource(c.stored, c.given); got != c.same {
			t.Errorf("sameResource(%q, %q) = %v, want %v", c.stored, c.given, got, c.same)
		}
	}
}
