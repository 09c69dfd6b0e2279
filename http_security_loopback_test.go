package pmcp

import (
	"testing"

	"github.com/gopmcp/pmcp/oauth"
)

// TestLoopbackRulesDiffer pins the three loopback rules and where they
// differ, on purpose (issue 19, the lead's decision): OAuth URLs use
// oauth.IsLoopbackHost (localhost or any loopback IP); the Streamable HTTP
// handler's DNS-rebinding checks are a transport rule of their own: the
// Host check accepts localhost, 127.0.0.0/8 and [::1], the Origin check
// only localhost, 127.0.0.1 and ::1 (README "Host / Origin").
func TestLoopbackRulesDiffer(t *testing.T) {
	type rules struct{ oauth, host, origin bool }
	for _, tc := range []struct {
		name string // as OAuth and Origin see it: no brackets, no port
		host string // as the Host header carries it
		want rules
	}{
		{"localhost", "localhost", rules{true, true, true}},
		{"LOCALHOST", "LOCALHOST", rules{true, true, true}},
		{"127.0.0.1", "127.0.0.1", rules{true, true, true}},
		{"::1", "[::1]", rules{true, true, true}},
		// The Origin rule takes only 127.0.0.1 of 127/8.
		{"127.0.0.2", "127.0.0.2", rules{true, true, false}},
		{"127.255.255.254", "127.255.255.254", rules{true, true, false}},
		// Other spellings of ::1 and the IPv4-mapped loopback: OAuth parses
		// them as loopback IPs; the Host check takes the literal it can
		// compare ([::1] and its long forms), the Origin rule none.
		{"0:0:0:0:0:0:0:1", "[0:0:0:0:0:0:0:1]", rules{true, true, false}},
		{"::ffff:127.0.0.1", "[::ffff:127.0.0.1]", rules{true, false, false}},
		{"localhost.example.com", "localhost.example.com", rules{false, false, false}},
		{"10.0.0.1", "10.0.0.1", rules{false, false, false}},
		{"0.0.0.0", "0.0.0.0", rules{false, false, false}},
		{"example.com", "example.com", rules{false, false, false}},
	} {
		hh, ok := parseHostHeader(tc.host)
		got := rules{oauth.IsLoopbackHost(tc.name), ok && hh.isLoopback(), isLoopbackName(tc.name)}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
