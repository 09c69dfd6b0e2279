package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/oauth"
)

// discoveryMaxBytes caps a metadata document.
const discoveryMaxBytes = 64 << 10

// ErrMetadata: no usable authorization server metadata.
var ErrMetadata = errors.New("pmcp: OAuth authorization server metadata unusable")

// ErrIssuerMismatch: an authorization server identified itself with
// another issuer, in its metadata or in the iss parameter of an
// authorization response (RFC 8414 §3.3, RFC 9207). The client stops.
var ErrIssuerMismatch = errors.New("pmcp: OAuth issuer mismatch")

// prmDoc is the part of an RFC 9728 document the client uses.
type prmDoc struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// asMetadata is the part of an RFC 8414 / OpenID document the client uses.
type asMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	DPoPSigningAlgValuesSupported     []string `json:"dpop_signing_alg_values_supported"`

	// fallback marks endpoints guessed without a document (2025-03-26).
	fallback bool
}

// getJSON fetches a JSON document. ok is false when there is none (an
// error status, a transport failure or a body that does not parse).
func getJSON(ctx context.Context, client *http.Client, u string, v any) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer peer.DrainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, discoveryMaxBytes+1))
	if err != nil {
		return resp.StatusCode, err
	}
	if len(b) > discoveryMaxBytes {
		return resp.StatusCode, fmt.Errorf("document larger than %d bytes", discoveryMaxBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return resp.StatusCode, fmt.Errorf("malformed JSON: %s", capPeerString(err.Error()))
	}
	return resp.StatusCode, nil
}

// discoverPRM finds the protected resource metadata of endpoint: the URL
// of the challenge first, then the path-inserted and the root well-known
// URLs (RFC 9728 §3.1). A document naming another resource is an error;
// no document at all is (nil, nil).
func discoverPRM(ctx context.Context, client *http.Client, endpoint *url.URL, fromChallenge string) (*prmDoc, error) {
	var candidates []string
	if fromChallenge != "" {
		// Another origin only over https (the document must still name
		// this endpoint as its resource).
		if mu, err := endpoint.Parse(fromChallenge); err == nil && (mu.Scheme == "https" || peer.SameOrigin(mu, endpoint)) {
			candidates = append(candidates, mu.String())
		}
	}
	wk := &url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host}
	if p := strings.TrimSuffix(endpoint.Path, "/"); p != "" {
		wk.Path = "/.well-known/oauth-protected-resource" + p
		candidates = append(candidates, wk.String())
	}
	wk.Path = "/.well-known/oauth-protected-resource"
	candidates = append(candidates, wk.String())
	for _, c := range candidates {
		var doc prmDoc
		if _, err := getJSON(ctx, client, c, &doc); err != nil || doc.Resource == "" {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		if !oauth.Covers(doc.Resource, endpoint.String()) {
			return nil, fmt.Errorf("%w: %q (metadata at %s) is not %s", pmcp.ErrResourceMismatch, capPeerString(doc.Resource), c, endpoint)
		}
		return &doc, nil
	}
	return nil, nil
}

// asMetadataURLs lists where the metadata of issuer is looked for, in the
// order MCP prescribes: RFC 8414 path-inserted, OpenID path-inserted, then
// OpenID path-appended (for an issuer without a path, the first two).
func asMetadataURLs(issuer *url.URL) []string {
	base := &url.URL{Scheme: issuer.Scheme, Host: issuer.Host}
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	mk := func(path string) string { return base.String() + path }
	if p == "" {
		return []string{mk("/.well-known/oauth-authorization-server"), mk("/.well-known/openid-configuration")}
	}
	return []string{
		mk("/.well-known/oauth-authorization-server" + p),
		mk("/.well-known/openid-configuration" + p),
		mk(p + "/.well-known/openid-configuration"),
	}
}

// discoverAS reads the metadata of the authorization server issuer. The
// document's issuer must equal issuer exactly. With fallback set (no
// protected resource metadata: the 2025-03-26 rules), a server without
// any document gets the default endpoints /authorize, /token and
// /register at the issuer, and a document naming an issuer of the same
// origin is accepted (see sameOriginString).
func discoverAS(ctx context.Context, client *http.Client, issuer string, fallback bool) (*asMetadata, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" || (iu.Scheme != "https" && iu.Scheme != "http") || iu.RawQuery != "" || iu.Fragment != "" {
		return nil, fmt.Errorf("%w: issuer %q is not an http(s) URL without query or fragment", ErrMetadata, capPeerString(issuer))
	}
	if err := checkASURL(issuer); err != nil {
		return nil, err
	}
	for _, u := range asMetadataURLs(iu) {
		var m asMetadata
		status, err := getJSON(ctx, client, u, &m)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if status == http.StatusOK {
				return nil, fmt.Errorf("%w: %s: %v", ErrMetadata, u, err)
			}
			continue
		}
		if m.Issuer != issuer && !(fallback && sameOriginString(m.Issuer, iu)) {
			return nil, fmt.Errorf("%w: the metadata at %s names issuer %q, not %q", ErrIssuerMismatch, u, capPeerString(m.Issuer), issuer)
		}
		for _, e := range []string{m.AuthorizationEndpoint, m.TokenEndpoint, m.RegistrationEndpoint} {
			if e == "" {
				continue
			}
			if err := checkASURL(e); err != nil {
				return nil, err
			}
		}
		if m.TokenEndpoint == "" {
			return nil, fmt.Errorf("%w: %s lists no token_endpoint", ErrMetadata, u)
		}
		return &m, nil
	}
	if !fallback {
		return nil, fmt.Errorf("%w: none found for issuer %s", ErrMetadata, issuer)
	}
	base := strings.TrimSuffix(issuer, "/")
	return &asMetadata{
		Issuer:                issuer,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
		fallback:              true,
	}, nil
}

// sameOriginString reports whether the URL s has the origin of u. Without
// protected resource metadata (2025-03-26) the authorization server is
// only known by the MCP server's origin, so a document served there that
// names an issuer of that origin with a path is accepted.
func sameOriginString(s string, u *url.URL) bool {
	v, err := url.Parse(s)
	return err == nil && v.Scheme == u.Scheme && v.Host == u.Host
}

// checkASURL requires https, or http to a loopback host (local
// development and tests), for every URL credentials are sent to.
func checkASURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrMetadata, capPeerString(s))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("%w: %q is neither https nor a loopback http URL", ErrMetadata, capPeerString(s))
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
