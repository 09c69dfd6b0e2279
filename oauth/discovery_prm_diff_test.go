package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// formerPRM was the pmcp client's protected resource metadata discovery:
// discoverPRM of the OAuth flow (sameOriginOnly false: a challenge URL of
// another origin taken over https) and authError's, explaining a 401
// without OAuth (sameOriginOnly true). Both skipped every URL without a
// document and refused one naming another resource.
func formerPRM(ctx context.Context, c *http.Client, endpoint *url.URL, challenge string, sameOriginOnly bool) (string, error) {
	var cands []string
	if challenge != "" {
		if mu, err := endpoint.Parse(challenge); err == nil &&
			(sameOrigin(mu.String(), endpoint) || (!sameOriginOnly && mu.Scheme == "https")) {
			cands = append(cands, mu.String())
		}
	}
	wk := &url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host}
	if p := strings.TrimSuffix(endpoint.Path, "/"); p != "" {
		wk.Path = "/.well-known/oauth-protected-resource" + p
		cands = append(cands, wk.String())
	}
	wk.Path = "/.well-known/oauth-protected-resource"
	cands = append(cands, wk.String())
	for _, cand := range cands {
		var doc ProtectedResourceMetadata
		if _, err := formerFetch(ctx, c, cand, &doc, true); err != nil || doc.Resource == "" {
			continue
		}
		if !Covers(doc.Resource, endpoint.String()) {
			return "", errors.New("resource mismatch")
		}
		return cand, nil
	}
	return "none", nil
}

// TestPRMDiscoveryOneRule runs the two former client rules (the OAuth
// flow's and the 401 explanation's) and DiscoverProtectedResource over
// one matrix (same origin, another https origin, another http origin, a
// bad document, a wrong resource, a large document) and pins where they
// disagreed. Chosen: the OAuth flow's rule, for both.
func TestPRMDiscoveryOneRule(t *testing.T) {
	const wk = "/.well-known/oauth-protected-resource"
	docs := map[string]string{} // "<server>|<path>" -> body, set per case
	var last string             // the last document served
	var mcp, other, tlsOther *httptest.Server
	serve := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			doc, ok := docs[name+"|"+r.URL.EscapedPath()]
			if !ok {
				http.NotFound(w, r)
				return
			}
			last = name + "|" + r.URL.EscapedPath()
			fmt.Fprint(w, strings.ReplaceAll(doc, "{mcp}", mcp.URL))
		}
	}
	mcp = httptest.NewServer(serve("mcp"))
	defer mcp.Close()
	other = httptest.NewServer(serve("other"))
	defer other.Close()
	tlsOther = httptest.NewTLSServer(serve("tls"))
	defer tlsOther.Close()
	client := tlsOther.Client() // trusts tlsOther, plain http as usual
	base := map[string]string{"mcp": mcp.URL, "other": other.URL, "tls": tlsOther.URL}

	doc := `{"resource":"{mcp}/mcp","authorization_servers":["https://as.example.com"]}`
	big := `{"resource":"{mcp}/mcp","authorization_servers":["https://as.example.com"],"x":"` + strings.Repeat("a", 100<<10) + `"}`
	for _, tc := range []struct {
		name      string
		endpoint  string            // path on mcp
		challenge string            // "<server>|<path>" or ""
		docs      map[string]string // "<server>|<path>" -> body
		// the OAuth flow before, the 401 explanation before, now (both)
		flow, explain, now string
	}{
		{name: "same origin", endpoint: "/mcp", challenge: "mcp|/prm", docs: map[string]string{"mcp|/prm": doc},
			flow: "mcp|/prm", explain: "mcp|/prm", now: "mcp|/prm"},
		// The 401 explanation took a challenge URL only from the
		// endpoint's origin; the flow also over https from another.
		{name: "another https origin", endpoint: "/mcp", challenge: "tls|/prm", docs: map[string]string{"tls|/prm": doc},
			flow: "tls|/prm", explain: "none", now: "tls|/prm"},
		{name: "another https origin, well-known too", endpoint: "/mcp", challenge: "tls|/prm", docs: map[string]string{"tls|/prm": doc, "mcp|" + wk + "/mcp": doc},
			flow: "tls|/prm", explain: "mcp|" + wk + "/mcp", now: "tls|/prm"},
		{name: "another http origin", endpoint: "/mcp", challenge: "other|/prm", docs: map[string]string{"other|/prm": doc, "mcp|" + wk: doc},
			flow: "mcp|" + wk, explain: "mcp|" + wk, now: "mcp|" + wk},
		{name: "a bad document is skipped", endpoint: "/mcp", challenge: "mcp|/prm", docs: map[string]string{"mcp|/prm": `{"resource":`, "mcp|" + wk + "/mcp": doc},
			flow: "mcp|" + wk + "/mcp", explain: "mcp|" + wk + "/mcp", now: "mcp|" + wk + "/mcp"},
		{name: "a wrong resource", endpoint: "/mcp", challenge: "mcp|/prm", docs: map[string]string{"mcp|/prm": `{"resource":"https://elsewhere.example/mcp"}`},
			flow: "error", explain: "error", now: "error"},
		{name: "nothing", endpoint: "/mcp", docs: map[string]string{},
			flow: "none", explain: "none", now: "none"},
		// 100 KiB: over the client's 64 KiB. Chosen: one cap, 256 KiB.
		{name: "a 100 KiB document", endpoint: "/mcp", docs: map[string]string{"mcp|" + wk + "/mcp": big},
			flow: "none", explain: "none", now: "mcp|" + wk + "/mcp"},
		// A trailing slash: the client looks without it, then at the root
		// URL (which MountProtectedResourceMetadata serves too; the
		// path-inserted URL a server publishes keeps the slash, see
		// TestProtectedResourceMetadataURL).
		{name: "trailing slash", endpoint: "/mcp/", docs: map[string]string{"mcp|" + wk: `{"resource":"{mcp}/mcp/"}`},
			flow: "mcp|" + wk, explain: "mcp|" + wk, now: "mcp|" + wk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(docs)
			for k, v := range tc.docs {
				docs[k] = v
			}
			challenge := ""
			if tc.challenge != "" {
				s, p, _ := strings.Cut(tc.challenge, "|")
				challenge = base[s] + p
			}
			name := func(u string, err error) string {
				if err != nil {
					return "error"
				}
				for s, b := range base {
					if strings.HasPrefix(u, b+"/") {
						return s + "|" + strings.TrimPrefix(u, b)
					}
				}
				return u
			}
			ctx := context.Background()
			eu, _ := url.Parse(mcp.URL + tc.endpoint)
			flow := name(formerPRM(ctx, client, eu, challenge, false))
			explain := name(formerPRM(ctx, client, eu, challenge, true))
			now := "none"
			m, err := DiscoverProtectedResource(ctx, client, eu.String(), challenge)
			switch {
			case err != nil:
				now = "error"
				if !errors.Is(err, ErrResourceMismatch) || !errors.Is(err, ErrMetadata) {
					t.Errorf("error %v is not ErrResourceMismatch and ErrMetadata", err)
				}
			case m != nil:
				now = last
			}
			got := [3]string{flow, explain, now}
			want := [3]string{tc.flow, tc.explain, tc.now}
			if got != want {
				t.Errorf("flow before, 401 explanation before, now:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestProtectedResourceMetadataURL pins where a server publishes its
// document (auth.MetadataURL's rule, moved here) against where a client
// looks first without a challenge: the same URL, except that the
// published one keeps a trailing slash and the query, and is canonical.
func TestProtectedResourceMetadataURL(t *testing.T) {
	for _, tc := range []struct{ resource, published, looked string }{
		{"https://example.com/public/mcp", "https://example.com/.well-known/oauth-protected-resource/public/mcp", "https://example.com/.well-known/oauth-protected-resource/public/mcp"},
		{"https://example.com", "https://example.com/.well-known/oauth-protected-resource", "https://example.com/.well-known/oauth-protected-resource"},
		{"https://example.com/", "https://example.com/.well-known/oauth-protected-resource", "https://example.com/.well-known/oauth-protected-resource"},
		{"https://example.com/mcp/", "https://example.com/.well-known/oauth-protected-resource/mcp/", "https://example.com/.well-known/oauth-protected-resource/mcp"},
		{"https://example.com/mcp?tenant=a", "https://example.com/.well-known/oauth-protected-resource/mcp?tenant=a", "https://example.com/.well-known/oauth-protected-resource/mcp"},
		{"HTTPS://Example.COM:443/mcp", "https://example.com/.well-known/oauth-protected-resource/mcp", "https://Example.COM:443/.well-known/oauth-protected-resource/mcp"},
	} {
		pub, err := ProtectedResourceMetadataURL(tc.resource)
		u, _ := url.Parse(tc.resource)
		looked := ProtectedResourceMetadataURLs(u, "")[0]
		if err != nil || pub != tc.published || looked != tc.looked {
			t.Errorf("%s: published %q (%v), looked %q; want %q, %q", tc.resource, pub, err, looked, tc.published, tc.looked)
		}
	}
	for _, bad := range []string{"", "mcp.example.com/mcp", "ftp://example.com/mcp", "https://example.com/mcp#frag", "https://user@example.com/mcp"} {
		var e *Error
		if _, err := ProtectedResourceMetadataURL(bad); !errors.As(err, &e) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
