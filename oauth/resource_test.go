package oauth

import (
	"net/url"
	"strings"
	"testing"
)

// The four rules resources were compared by before this package, kept
// here verbatim in substance so the differential test below shows where
// they disagreed and pins the one rule that replaced them.

// formerAuth: auth.CanonicalResource and auth.sameResource (server token
// checks): trailing slashes trimmed, an empty host let through.
func formerAuth(token, server string) bool {
	canon := func(s string) (string, bool) {
		u, err := url.Parse(s)
		if err != nil {
			return "", false
		}
		u.Scheme = strings.ToLower(u.Scheme)
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Opaque != "" || strings.Contains(s, "#") {
			return "", false
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
			port = ""
		}
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		if port != "" {
			host += ":" + port
		}
		u.Host, u.Path, u.RawPath, u.ForceQuery = host, strings.TrimRight(u.Path, "/"), "", false
		return u.String(), true
	}
	c, ok := canon(server)
	if !ok {
		return false
	}
	if token == c {
		return true
	}
	t, ok := canon(token)
	return ok && t == c
}

// formerOAuthClient: pmcp's canonicalResource (the resource parameter the
// client asks tokens for), compared as strings: case folded, fragment
// dropped, default port and path kept.
func formerOAuthClient(a, b string) bool {
	canon := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		u.Fragment, u.RawFragment = "", ""
		return u.String()
	}
	return canon(a) == canon(b)
}

// formerClientHTTP: pmcp's sameResource (does the protected resource
// metadata's resource designate the endpoint): same origin, paths
// compared without a trailing slash, a prefix at a segment boundary
// allowed, the query ignored.
func formerClientHTTP(res, endpoint string) bool {
	r, err := url.Parse(res)
	u, err2 := url.Parse(endpoint)
	if err != nil || err2 != nil || r.Fragment != "" || !strings.EqualFold(r.Scheme, u.Scheme) || !strings.EqualFold(r.Host, u.Host) {
		return false
	}
	rp, up := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(u.Path, "/")
	return rp == up || strings.HasPrefix(up, rp+"/")
}

// formerCLI: cmd/pmcp's sameResource (pmcp logout URL): case folded,
// fragment dropped, one trailing slash trimmed, default port kept.
func formerCLI(stored, given string) bool {
	norm := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		u.Fragment, u.RawFragment = "", ""
		u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), ""
		return u.String()
	}
	return norm(stored) == norm(given)
}

// TestFormerRulesDisagreedOneRuleNow feeds the same pairs to every former
// rule and to Same and Covers: the former verdicts are pinned to show the
// disagreement (A auth, O OAuth client, H client PRM check, C CLI; 1 the
// rule said "same"), the last two columns are the rule now.
func TestFormerRulesDisagreedOneRuleNow(t *testing.T) {
	const base = "https://mcp.example.com/mcp"
	cases := []struct {
		a, b         string
		former       string // A O H C
		same, covers bool
	}{
		{base, base, "1111", true, true},
		{base + "/", base, "1011", false, false}, // issue 18 item 18: the slash names another resource
		{base, base + "/", "1011", false, true},  // a resource covers the paths below it
		{"HTTPS://MCP.Example.COM/mcp", base, "1111", true, true},
		{"https://mcp.example.com:443/mcp", base, "1000", true, true}, // default port
		{"http://mcp.example.com:80/mcp", "http://mcp.example.com/mcp", "1000", true, true},
		{base + "#frag", base, "0101", false, false}, // a fragment is no resource
		{"https://mcp.example.com", "https://mcp.example.com/", "1011", true, true},
		{"https://mcp.example.com", base, "0010", false, true},
		{"https://mcp.example.com/m", base, "0000", false, false}, // not at a segment boundary
		{base + "?tenant=a", base, "0010", false, false},
		{base, base + "?tenant=a", "0010", false, true},
		{"https://u@mcp.example.com/mcp", base, "0010", false, false}, // user information
		{"https://:", "https://:/", "1011", false, false},             // no host (the fuzz finding)
		{"https://mcp.example.com:8443/mcp", base, "0000", false, false},
		{"ftp://mcp.example.com/mcp", "ftp://mcp.example.com/mcp", "0111", false, false},
		{base + "//", base + "/", "1000", false, false},
	}
	b := func(v bool) byte {
		if v {
			return '1'
		}
		return '0'
	}
	for _, c := range cases {
		got := string([]byte{b(formerAuth(c.a, c.b)), b(formerOAuthClient(c.a, c.b)), b(formerClientHTTP(c.a, c.b)), b(formerCLI(c.a, c.b))})
		if got != c.former {
			t.Errorf("%q vs %q: former rules said %s, pinned %s", c.a, c.b, got, c.former)
		}
		if s := Same(c.a, c.b); s != c.same || Same(c.b, c.a) != c.same {
			t.Errorf("Same(%q, %q) = %v, want %v (symmetric)", c.a, c.b, s, c.same)
		}
		if cv := Covers(c.a, c.b); cv != c.covers {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.a, c.b, cv, c.covers)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://MCP.Example.COM:443/mcp":    "https://mcp.example.com/mcp",
		"https://mcp.example.com/mcp/":       "https://mcp.example.com/mcp/",
		"https://mcp.example.com/":           "https://mcp.example.com",
		"https://mcp.example.com":            "https://mcp.example.com",
		"https://mcp.example.com:/mcp":       "https://mcp.example.com/mcp",
		"http://127.0.0.1:8080/mcp":          "http://127.0.0.1:8080/mcp",
		"https://[::1]:443/":                 "https://[::1]",
		"https://mcp.example.com/mcp?":       "https://mcp.example.com/mcp",
		"https://mcp.example.com/mcp?t=A":    "https://mcp.example.com/mcp?t=A",
		"https://mcp.example.com/%7euser/x":  "https://mcp.example.com/~user/x",
		"https://[fe80::1%25eth0]:443/mcp":   "https://[fe80::1%25eth0]/mcp",
		"https://MCP.example.com/a%2Fb/":     "https://mcp.example.com/a/b/",
		"https://mcp.example.com/Case/Path/": "https://mcp.example.com/Case/Path/",
	} {
		got, err := Canonical(in)
		if err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
			continue
		}
		if again, err := Canonical(got); err != nil || again != got {
			t.Errorf("Canonical(%q) = %q, %v: not idempotent", got, again, err)
		}
	}
	for _, bad := range []string{"", "mcp.example.com/mcp", "ftp://x/mcp", "https://x/mcp#f", "https://x/mcp#", "https://u@x/mcp",
		"https://:", "https://:443/mcp", "https:x/mcp", "https:///mcp", "http://%zz"} {
		if got, err := Canonical(bad); err == nil {
			t.Errorf("Canonical(%q) = %q, want an error", bad, got)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"https://:", "HTTPS://MCP.example.com:443/mcp/?q", "https://[::1]:80/", "http://%zz", "https://a@b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonical(s)
		if err != nil {
			return
		}
		again, err := Canonical(c)
		if err != nil || again != c {
			t.Fatalf("%q -> %q -> %q, %v", s, c, again, err)
		}
		if !Same(s, c) || !Covers(c, s) {
			t.Fatalf("%q and its canonical form %q are not the same resource", s, c)
		}
	})
}
