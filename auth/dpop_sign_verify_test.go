package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/oauth"
)

// TestDPoPClientSignsWhatServerChecks: a proof signed by the client's
// signer (oauth.Signer, htu = oauth.HTU of the request URL) passes the
// server's checker (oauth.HTU of the proof's htu against oauth.HTU of the
// target) for every spelling of the same URI: case, default port, a
// trailing slash on the bare origin, query, fragment; another path, port
// or scheme fails.
func TestDPoPClientSignsWhatServerChecks(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := oauth.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string   // the server's TargetURI
		ok     []string // request URLs the client may sign
		bad    []string
	}{
		{"https://mcp.example.com/mcp",
			[]string{"https://mcp.example.com/mcp", "HTTPS://MCP.EXAMPLE.COM/mcp", "https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp?session=1", "https://mcp.example.com/mcp#f"},
			[]string{"https://mcp.example.com/mcp/", "https://mcp.example.com/MCP", "http://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", "https://other.example.com/mcp"}},
		{"https://mcp.example.com",
			[]string{"https://mcp.example.com", "https://mcp.example.com/", "https://MCP.example.com:443/?q"},
			[]string{"https://mcp.example.com/mcp"}},
		{"http://127.0.0.1:8080/mcp/",
			[]string{"http://127.0.0.1:8080/mcp/", "HTTP://127.0.0.1:8080/mcp/?x"},
			[]string{"http://127.0.0.1:8080/mcp", "http://127.0.0.1/mcp/"}},
	} {
		d, err := newDPoPChecker(DPoPOptions{}, tc.target)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range append(append([]string{}, tc.ok...), tc.bad...) {
			want := indexOf(tc.ok, u) >= 0
			p, err := s.DPoPProof("POST", u, "tok", "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("POST", "http://ignored.example/", nil)
			r.Header.Set("DPoP", p)
			err = d.check(r, "tok", s.Thumbprint())
			if (err == nil) != want {
				t.Errorf("target %s, client URL %s: %v (want accepted: %v)", tc.target, u, err, want)
			}
			if err != nil && !errors.Is(err, ErrInvalidDPoPProof) {
				t.Errorf("%s: %v is not ErrInvalidDPoPProof", u, err)
			}
		}
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
