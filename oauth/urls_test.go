package oauth

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
)

// The rules OAuth URLs were checked by before this file, kept here in
// substance so the differential tests below show where they disagreed and
// pin the one rule that replaced them.

// formerLoopback was auth.IsLoopbackHost and, as a second copy, the pmcp
// client's isLoopbackHost (oauth_discovery.go): the same rule.
func formerLoopback(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// formerAuthIssuer was auth's checkIssuerURL, applied to the issuer and
// to the discovered jwks_uri: no user information, query or fragment.
func formerAuthIssuer(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && formerLoopback(u.Hostname()))
}

// formerClientAS was the pmcp client's checkASURL, applied to the issuer
// and to the authorization, token and registration endpoints: user
// information and a query let through.
func formerClientAS(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && formerLoopback(u.Hostname()))
}

// formerClientIssuer was the pmcp client's issuer check (discoverAS):
// http(s) without query or fragment, then checkASURL.
func formerClientIssuer(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return formerClientAS(s)
}

func TestIsLoopbackHostOneRule(t *testing.T) {
	yes := []string{"localhost", "LOCALHOST", "LocalHost", "127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"}
	no := []string{"", "localhost.", "localhost.example.com", "10.0.0.1", "0.0.0.0", "::", "example.com", "[::1]", "127.0.0.1:80", "128.0.0.1", "::2", "fe80::1"}
	for _, h := range yes {
		if !IsLoopbackHost(h) || !formerLoopback(h) {
			t.Errorf("%q: IsLoopbackHost %v, former %v; want loopback", h, IsLoopbackHost(h), formerLoopback(h))
		}
	}
	for _, h := range no {
		if IsLoopbackHost(h) || formerLoopback(h) {
			t.Errorf("%q: IsLoopbackHost %v, former %v; want not loopback", h, IsLoopbackHost(h), formerLoopback(h))
		}
	}
}

// TestCredentialURLOneRule feeds the same URLs to the former checks and
// pins where each disagreed with the chosen rule: CheckCredentialURL for
// endpoints and key sets (a query is allowed, RFC 6749 §3.1; user
// information never), CheckIssuerURL for issuers (no query or fragment
// either, RFC 8414 §2).
func TestCredentialURLOneRule(t *testing.T) {
	// want: CheckCredentialURL, CheckIssuerURL, formerAuthIssuer,
	// formerClientAS, formerClientIssuer.
	for _, tc := range []struct {
		url  string
		want [5]bool
	}{
		{"https://as.example.com", [5]bool{true, true, true, true, true}},
		{"https://as.example.com/tenant/", [5]bool{true, true, true, true, true}},
		{"HTTPS://AS.example.com:443", [5]bool{true, true, true, true, true}},
		{"http://localhost:8080", [5]bool{true, true, true, true, true}},
		{"http://127.9.9.9/as", [5]bool{true, true, true, true, true}},
		{"http://[::1]:9000", [5]bool{true, true, true, true, true}},
		{"http://as.example.com", [5]bool{false, false, false, false, false}},
		{"http://10.0.0.1:8080", [5]bool{false, false, false, false, false}},
		{"ftp://as.example.com", [5]bool{false, false, false, false, false}},
		{"as.example.com", [5]bool{false, false, false, false, false}},
		{"", [5]bool{false, false, false, false, false}},
		{"https:opaque", [5]bool{false, false, false, false, false}},
		// A query: allowed for endpoints, never in an issuer; auth
		// refused it in a jwks_uri too.
		{"https://as.example.com/token?x=1", [5]bool{true, false, false, true, false}},
		// A fragment: never in an issuer; the client let it through in
		// an endpoint (RFC 6749 §3.1 forbids it there too, but a client
		// never sends one: kept allowed for endpoints).
		{"https://as.example.com/token#f", [5]bool{true, false, false, true, false}},
		// User information: refused everywhere now; the client let it
		// through in endpoints and issuers.
		{"https://u:p@as.example.com/token", [5]bool{false, false, false, true, true}},
	} {
		_, e1 := CheckCredentialURL(tc.url)
		_, e2 := CheckIssuerURL(tc.url)
		got := [5]bool{e1 == nil, e2 == nil, formerAuthIssuer(tc.url), formerClientAS(tc.url), formerClientIssuer(tc.url)}
		if got != tc.want {
			t.Errorf("%q: got %v, want %v (CheckCredentialURL, CheckIssuerURL, former auth issuer, former client endpoint, former client issuer)", tc.url, got, tc.want)
		}
		for _, err := range []error{e1, e2} {
			if err != nil && !errors.Is(err, ErrCredentialURL) {
				t.Errorf("%q: %v does not wrap ErrCredentialURL", tc.url, err)
			}
		}
	}
}

func TestQuotedCapsPeerStrings(t *testing.T) {
	s := quoted(strings.Repeat("a", 10_000) + "\n")
	if len(s) > maxQuoted+8 || strings.Contains(s, "\n") {
		t.Fatalf("%d bytes: %s", len(s), s[:20])
	}
	if got := quoted("a\r\nb"); got != `"a\r\nb"` {
		t.Fatal(got)
	}
}
