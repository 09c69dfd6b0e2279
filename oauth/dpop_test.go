package oauth

import "testing"

// FuzzNormalizeHTU: a DPoP htu from the peer never panics and is
// idempotent once normalised.
func FuzzNormalizeHTU(f *testing.F) {
	for _, s := range []string{"https://mcp.example.com/mcp", "HTTPS://MCP.example.com:443/mcp/?q#f", "https://[::1]:80/", "http://%zz", "https://a@b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := HTU(s)
		if err != nil {
			return
		}
		again, err := HTU(n)
		if err != nil || again != n {
			t.Fatalf("%q -> %q -> %q, %v", s, n, again, err)
		}
	})
}
