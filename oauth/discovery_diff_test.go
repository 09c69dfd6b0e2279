package oauth

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// The two authorization server discoveries and the three protected
// resource metadata rules before this package, kept here in substance so
// the differential tests below show where they disagreed and pin the one
// rule that replaced them (issue 19).

// formerFetch was the fetch of both: auth's (encoding/json, 256 KiB) and
// the pmcp client's getJSON (go-json-experiment, case-sensitive names,
// duplicate names refused, 64 KiB). status is 0 without an answer.
func formerFetch(ctx context.Context, c *http.Client, u string, v any, client bool) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	max := 256 << 10
	if client {
		max = 64 << 10
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if len(b) > max {
		return 200, errors.New("document larger")
	}
	if client {
		return 200, jsonv2.Unmarshal(b, v)
	}
	return 200, stdjson.Unmarshal(b, v)
}

// formerAuthDiscover was auth.DiscoverIssuer: the issuer's unescaped path,
// every failed URL skipped, jwks_uri required and checked like an issuer.
func formerAuthDiscover(ctx context.Context, c *http.Client, issuer string) (string, error) {
	if !formerAuthIssuer(issuer) {
		return "", errors.New("issuer")
	}
	u, _ := url.Parse(issuer)
	path, origin := strings.TrimSuffix(u.Path, "/"), u.Scheme+"://"+u.Host
	cands := []string{origin + "/.well-known/oauth-authorization-server" + path}
	if path == "" {
		cands = append(cands, origin+"/.well-known/openid-configuration")
	} else {
		cands = append(cands, origin+"/.well-known/openid-configuration"+path, origin+path+"/.well-known/openid-configuration")
	}
	for _, cand := range cands {
		var m AuthServerMetadata
		if _, err := formerFetch(ctx, c, cand, &m, false); err != nil {
			continue
		}
		if m.Issuer != issuer {
			return "", errors.New("issuer mismatch")
		}
		if m.JWKSURI == "" || !formerAuthIssuer(m.JWKSURI) {
			return "", errors.New("jwks_uri")
		}
		return cand, nil
	}
	return "", errors.New("none")
}

// formerClientDiscover was the pmcp client's discoverAS: the escaped path,
// a 200 that does not parse ends the discovery, endpoints checked with
// checkASURL, token_endpoint required, the 2025-03-26 fallback.
func formerClientDiscover(ctx context.Context, c *http.Client, issuer string, fallback bool) (string, error) {
	if !formerClientIssuer(issuer) {
		return "", errors.New("issuer")
	}
	iu, _ := url.Parse(issuer)
	base := iu.Scheme + "://" + iu.Host
	p := strings.TrimSuffix(iu.EscapedPath(), "/")
	cands := []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}
	if p != "" {
		cands = []string{base + "/.well-known/oauth-authorization-server" + p, base + "/.well-known/openid-configuration" + p, base + p + "/.well-known/openid-configuration"}
	}
	for _, cand := range cands {
		var m AuthServerMetadata
		if status, err := formerFetch(ctx, c, cand, &m, true); err != nil {
			if status == 200 {
				return "", err
			}
			continue
		}
		if m.Issuer != issuer && !(fallback && sameOrigin(m.Issuer, iu)) {
			return "", errors.New("issuer mismatch")
		}
		for _, e := range []string{m.AuthorizationEndpoint, m.TokenEndpoint, m.RegistrationEndpoint} {
			if e != "" && !formerClientAS(e) {
				return "", errors.New("endpoint")
			}
		}
		if m.TokenEndpoint == "" {
			return "", errors.New("no token_endpoint")
		}
		return cand, nil
	}
	if fallback {
		return "fallback", nil
	}
	return "", errors.New("none")
}

// outcome is what a discovery did, in a form the tables compare: the
// path of the document used, "fallback", or "error".
func outcome(ts *httptest.Server, u string, err error) string {
	if err != nil {
		return "error"
	}
	return strings.TrimPrefix(u, ts.URL)
}

// TestAuthServerDiscoveryOneRule runs the former discoveries and
// DiscoverAuthServer (with each former caller's own requirement on top:
// jwks_uri for the resource server, token_endpoint for the client) over
// one matrix of authorization servers, and pins where they disagreed.
func TestAuthServerDiscoveryOneRule(t *testing.T) {
	const (
		oas  = "/.well-known/oauth-authorization-server"
		oidc = "/.well-known/openid-configuration"
	)
	good := `{"issuer":"{iss}","jwks_uri":"{url}/keys","token_endpoint":"{url}/token"}`
	for _, tc := range []struct {
		name       string
		issuerPath string
		docs       map[string]string // path -> body; "!" answers 500
		fallback   bool
		// server: DiscoverIssuer before and now; client: discoverAS before
		// and now.
		authBefore, authNow, clientBefore, clientNow string
	}{
		{name: "RFC 8414", docs: map[string]string{oas: good},
			authBefore: oas, authNow: oas, clientBefore: oas, clientNow: oas},
		{name: "OpenID only", docs: map[string]string{oidc: good},
			authBefore: oidc, authNow: oidc, clientBefore: oidc, clientNow: oidc},
		{name: "path-inserted", issuerPath: "/t", docs: map[string]string{oas + "/t": good},
			authBefore: oas + "/t", authNow: oas + "/t", clientBefore: oas + "/t", clientNow: oas + "/t"},
		{name: "OpenID appended", issuerPath: "/t", docs: map[string]string{"/t" + oidc: good},
			authBefore: "/t" + oidc, authNow: "/t" + oidc, clientBefore: "/t" + oidc, clientNow: "/t" + oidc},
		{name: "an error status is skipped", docs: map[string]string{oas: "!", oidc: good},
			authBefore: oidc, authNow: oidc, clientBefore: oidc, clientNow: oidc},
		// A 200 that is not JSON: auth went on to OpenID, the client
		// stopped. Chosen: stop (the server has a document and it is
		// broken).
		{name: "a broken document", docs: map[string]string{oas: `{"issuer":`, oidc: good},
			authBefore: oidc, authNow: "error", clientBefore: "error", clientNow: "error"},
		// 100 KiB: within auth's 256 KiB, over the client's 64 KiB.
		// Chosen: one cap, 256 KiB (MaxMetadataBytes).
		{name: "a 100 KiB document", docs: map[string]string{oas: `{"issuer":"{iss}","jwks_uri":"{url}/keys","token_endpoint":"{url}/token","x":"` + strings.Repeat("a", 100<<10) + `"}`},
			authBefore: oas, authNow: oas, clientBefore: "error", clientNow: oas},
		{name: "over 256 KiB", docs: map[string]string{oas: `{"issuer":"{iss}","x":"` + strings.Repeat("a", 256<<10) + `"}`, oidc: good},
			authBefore: oidc, authNow: "error", clientBefore: "error", clientNow: "error"},
		{name: "another issuer", docs: map[string]string{oas: `{"issuer":"{url}/other","jwks_uri":"{url}/keys","token_endpoint":"{url}/token"}`},
			authBefore: "error", authNow: "error", clientBefore: "error", clientNow: "error"},
		{name: "another issuer of the origin, fallback", issuerPath: "", fallback: true, docs: map[string]string{oas: `{"issuer":"{url}/other","token_endpoint":"{url}/token"}`},
			authBefore: "error", authNow: "error", clientBefore: oas, clientNow: oas},
		{name: "nothing, fallback", fallback: true, docs: map[string]string{},
			authBefore: "error", authNow: "error", clientBefore: "fallback", clientNow: "fallback"},
		// A percent-encoded issuer path: auth inserted the decoded path.
		// Chosen: the path as written (escaped).
		{name: "encoded path", issuerPath: "/a%2Fb", docs: map[string]string{oas + "/a%2Fb": good},
			authBefore: "error", authNow: oas + "/a%2Fb", clientBefore: oas + "/a%2Fb", clientNow: oas + "/a%2Fb"},
		// An authorization endpoint over plain http on a public host: auth
		// did not look at it. Chosen: refused for both roles.
		{name: "insecure authorization endpoint", docs: map[string]string{oas: `{"issuer":"{iss}","jwks_uri":"{url}/keys","token_endpoint":"{url}/token","authorization_endpoint":"http://as.example.com/a"}`},
			authBefore: oas, authNow: "error", clientBefore: "error", clientNow: "error"},
		// A jwks_uri with a query: auth refused it (its issuer rule).
		// Chosen: allowed, like every endpoint.
		{name: "jwks_uri with a query", docs: map[string]string{oas: `{"issuer":"{iss}","jwks_uri":"{url}/keys?v=2","token_endpoint":"{url}/token"}`},
			authBefore: "error", authNow: oas, clientBefore: oas, clientNow: oas},
		{name: "insecure jwks_uri", docs: map[string]string{oas: `{"issuer":"{iss}","jwks_uri":"http://keys.example.com/k","token_endpoint":"{url}/token"}`},
			authBefore: "error", authNow: "error", clientBefore: oas, clientNow: "error"},
		// Member names in another case: the client's decoder did not
		// match them (so no token_endpoint), encoding/json does. Chosen:
		// encoding/json (the leaf imports the standard library only).
		{name: "member names in upper case", docs: map[string]string{oas: `{"ISSUER":"{iss}","JWKS_URI":"{url}/keys","TOKEN_ENDPOINT":"{url}/token"}`},
			authBefore: oas, authNow: oas, clientBefore: "error", clientNow: oas},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ts *httptest.Server
			ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				doc, ok := tc.docs[r.URL.EscapedPath()]
				switch {
				case !ok:
					http.NotFound(w, r)
				case doc == "!":
					http.Error(w, "boom", http.StatusInternalServerError)
				default:
					doc = strings.ReplaceAll(doc, "{iss}", ts.URL+tc.issuerPath)
					fmt.Fprint(w, strings.ReplaceAll(doc, "{url}", ts.URL))
				}
			}))
			defer ts.Close()
			ctx, c, issuer := context.Background(), ts.Client(), ts.URL+tc.issuerPath

			u, err := formerAuthDiscover(ctx, c, issuer)
			authBefore := outcome(ts, u, err)
			m, err := DiscoverAuthServer(ctx, c, issuer, DiscoverOptions{})
			if err == nil && m.JWKSURI == "" {
				err = errors.New("no jwks_uri")
			}
			authNow := "error"
			if err == nil {
				authNow = outcome(ts, m.URL, nil)
			}
			u, err = formerClientDiscover(ctx, c, issuer, tc.fallback)
			clientBefore := outcome(ts, u, err)
			m, err = DiscoverAuthServer(ctx, c, issuer, DiscoverOptions{Fallback: tc.fallback})
			if err == nil && m.TokenEndpoint == "" {
				err = errors.New("no token_endpoint")
			}
			clientNow := "error"
			switch {
			case err == nil && m.Fallback:
				clientNow = "fallback"
			case err == nil:
				clientNow = outcome(ts, m.URL, nil)
			}
			got := [4]string{authBefore, authNow, clientBefore, clientNow}
			want := [4]string{tc.authBefore, tc.authNow, tc.clientBefore, tc.clientNow}
			if got != want {
				t.Errorf("auth before/now, client before/now:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestAuthServerMetadataURLsOneList: both former URL lists were the same
// for issuers whose path has no percent-encoding.
func TestAuthServerMetadataURLsOneList(t *testing.T) {
	for issuer, want := range map[string]string{
		"https://as.example.com":          "https://as.example.com/.well-known/oauth-authorization-server https://as.example.com/.well-known/openid-configuration",
		"https://as.example.com/":         "https://as.example.com/.well-known/oauth-authorization-server https://as.example.com/.well-known/openid-configuration",
		"https://as.example.com/tenant/1": "https://as.example.com/.well-known/oauth-authorization-server/tenant/1 https://as.example.com/.well-known/openid-configuration/tenant/1 https://as.example.com/tenant/1/.well-known/openid-configuration",
		"http://127.0.0.1:9/t/":           "http://127.0.0.1:9/.well-known/oauth-authorization-server/t http://127.0.0.1:9/.well-known/openid-configuration/t http://127.0.0.1:9/t/.well-known/openid-configuration",
	} {
		u, _ := url.Parse(issuer)
		if got := strings.Join(AuthServerMetadataURLs(u), " "); got != want {
			t.Errorf("%s:\n got %s\nwant %s", issuer, got, want)
		}
	}
}
