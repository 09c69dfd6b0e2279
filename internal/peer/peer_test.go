package peer

import (
	"net/url"
	"strings"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://rs.example/mcp", "HTTPS://RS.example/.well-known/x", true},
		{"https://rs.example/mcp", "http://rs.example/mcp", false},
		{"https://rs.example/mcp", "https://rs.example:8443/mcp", false},
		{"https://rs.example/mcp", "https://as.example/mcp", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := SameOrigin(a, b); got != tc.want {
			t.Errorf("SameOrigin(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

func TestCapString(t *testing.T) {
	if got := CapString("a\x00b\x1bc\u0085d\tok\xff", 64); got != "a b c d\tok\uFFFD" {
		t.Fatalf("CapString: %q", got)
	}
	if got := CapString(strings.Repeat("é", 100), 16); len(got) > 16 || !strings.HasSuffix(got, "é...") {
		t.Fatalf("CapString cut: %q", got)
	}
}
