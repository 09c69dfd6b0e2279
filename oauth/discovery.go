package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// MaxMetadataBytes caps every metadata document read (authorization
// server and protected resource metadata).
const MaxMetadataBytes = 256 << 10

// DiscoverOptions tune DiscoverAuthServer. The zero value works.
type DiscoverOptions struct {
	// Fallback applies the 2025-03-26 MCP rules, for a client that found
	// no protected resource metadata and takes the MCP server's origin as
	// the issuer: a document naming an issuer of the same origin is
	// accepted, and without any document the default endpoints
	// /authorize, /token and /register at the issuer are returned, with
	// AuthServerMetadata.Fallback set.
	Fallback bool
}

// AuthServerMetadataURLs lists where the metadata of the authorization
// server issuer is looked for, in the order MCP prescribes: RFC 8414
// path-inserted, OpenID Connect path-inserted, then OpenID Connect
// path-appended; for an issuer without a path, the first two (the plain
// well-known URLs). A trailing slash of the issuer's path is dropped; the
// path keeps its percent-encoding.
func AuthServerMetadataURLs(issuer *url.URL) []string {
	origin := issuer.Scheme + "://" + issuer.Host
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{origin + WellKnownAuthServer, origin + WellKnownOpenID}
	}
	return []string{origin + WellKnownAuthServer + p, origin + WellKnownOpenID + p, origin + p + WellKnownOpenID}
}

// DiscoverAuthServer fetches the metadata of the authorization server
// issuer from AuthServerMetadataURLs, in order, and returns the first
// document found once it is usable:
//   - the issuer must pass CheckIssuerURL;
//   - a URL that answers other than 200 (or not at all) is skipped; a
//     200 whose body is not a JSON object within MaxMetadataBytes ends
//     the discovery with an error (the server has a document, and it is
//     broken);
//   - the document's issuer must equal issuer exactly (RFC 8414 §3.3),
//     else the error wraps ErrIssuerMismatch (with Fallback, an issuer of
//     the same origin is accepted);
//   - every endpoint it lists that credentials go to or keys come from
//     (authorization, token, registration, jwks_uri) must pass
//     CheckCredentialURL.
//
// Which endpoints must be present is the caller's business (a resource
// server needs jwks_uri, a client token_endpoint). Every error wraps
// ErrMetadata; ctx bounds the whole discovery, and its error is wrapped
// too. A nil client means http.DefaultClient.
func DiscoverAuthServer(ctx context.Context, client *http.Client, issuer string, opts DiscoverOptions) (*AuthServerMetadata, error) {
	iu, err := CheckIssuerURL(issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: issuer: %w", ErrMetadata, err)
	}
	var errs []error
	for _, u := range AuthServerMetadataURLs(iu) {
		var m AuthServerMetadata
		found, err := fetchJSON(ctx, client, u, &m)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: issuer %s: %w", ErrMetadata, quoted(issuer), ctx.Err())
			}
			if found {
				return nil, fmt.Errorf("%w: %w", ErrMetadata, err)
			}
			errs = append(errs, err)
			continue
		}
		if m.Issuer != issuer && !(opts.Fallback && sameOrigin(m.Issuer, iu)) {
			return nil, fmt.Errorf("%w: %w: the metadata at %s names issuer %s, not %s", ErrMetadata, ErrIssuerMismatch, u, quoted(m.Issuer), quoted(issuer))
		}
		for _, e := range []string{m.AuthorizationEndpoint, m.TokenEndpoint, m.RegistrationEndpoint, m.JWKSURI} {
			if e == "" {
				continue
			}
			if _, err := CheckCredentialURL(e); err != nil {
				return nil, fmt.Errorf("%w: the metadata at %s: %w", ErrMetadata, u, err)
			}
		}
		m.URL, m.Fallback = u, false
		return &m, nil
	}
	if !opts.Fallback {
		return nil, fmt.Errorf("%w: none found for issuer %s: %w", ErrMetadata, quoted(issuer), errors.Join(errs...))
	}
	base := strings.TrimSuffix(issuer, "/")
	return &AuthServerMetadata{
		Issuer:                issuer,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
		Fallback:              true,
	}, nil
}

// sameOrigin reports whether the URL s has the scheme and host (with
// port) of u.
func sameOrigin(s string, u *url.URL) bool {
	v, err := url.Parse(s)
	return err == nil && strings.EqualFold(v.Scheme, u.Scheme) && strings.EqualFold(v.Host, u.Host)
}

// ProtectedResourceMetadataURL returns the path-inserted well-known URL
// of the protected resource metadata of resource (RFC 9728 §3.1), where a
// server publishes it: the well-known path goes between the host and the
// canonical resource's path, the query kept, so
// https://example.com/public/mcp gives
// https://example.com/.well-known/oauth-protected-resource/public/mcp.
// Its error is Canonical's.
func ProtectedResourceMetadataURL(resource string) (string, error) {
	res, err := Canonical(resource)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(res) // canonical
	u.Path = WellKnownProtectedResource + u.Path
	u.RawPath = ""
	return u.String(), nil
}

// ProtectedResourceMetadataURLs lists where a client looks for the
// protected resource metadata of endpoint, in order: the URL of the
// challenge's resource_metadata (resolved against endpoint) when it is
// https or of endpoint's origin, then the path-inserted well-known URL
// (endpoint's path without a trailing slash or query), then the root one
// (RFC 9728 §3.1, §5.1). A server that mounts its document with
// auth.MountProtectedResourceMetadata serves it at the root URL too.
func ProtectedResourceMetadataURLs(endpoint *url.URL, challengeURL string) []string {
	var out []string
	if challengeURL != "" {
		// Another origin only over https (the document must still name
		// this endpoint as its resource).
		if mu, err := endpoint.Parse(challengeURL); err == nil && (mu.Scheme == "https" || sameOrigin(mu.String(), endpoint)) {
			out = append(out, mu.String())
		}
	}
	origin := endpoint.Scheme + "://" + endpoint.Host
	if p := strings.TrimSuffix(endpoint.EscapedPath(), "/"); p != "" {
		out = append(out, origin+WellKnownProtectedResource+p)
	}
	return append(out, origin+WellKnownProtectedResource)
}

// DiscoverProtectedResource finds the protected resource metadata of the
// MCP endpoint at ProtectedResourceMetadataURLs(endpoint, challengeURL),
// in order: a URL that gives no document with a resource (an error
// status, a transport failure, a body over MaxMetadataBytes or not JSON)
// is skipped; the first document found must have a resource that covers
// endpoint (Covers), else the error wraps ErrResourceMismatch (and
// ErrMetadata). No document at all is (nil, nil); ctx's error ends the
// search and is returned wrapped in ErrMetadata. A nil client means
// http.DefaultClient.
func DiscoverProtectedResource(ctx context.Context, client *http.Client, endpoint, challengeURL string) (*ProtectedResourceMetadata, error) {
	eu, err := url.Parse(endpoint)
	if err != nil || eu.Host == "" || (eu.Scheme != "https" && eu.Scheme != "http") {
		return nil, fmt.Errorf("%w: endpoint %s is not an absolute http(s) URL", ErrMetadata, quoted(endpoint))
	}
	for _, u := range ProtectedResourceMetadataURLs(eu, challengeURL) {
		var doc ProtectedResourceMetadata
		if _, err := fetchJSON(ctx, client, u, &doc); err != nil || doc.Resource == "" {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %w", ErrMetadata, ctx.Err())
			}
			continue
		}
		if !Covers(doc.Resource, eu.String()) {
			return nil, fmt.Errorf("%w: %w: %s (metadata at %s) is not %s", ErrMetadata, ErrResourceMismatch, quoted(doc.Resource), u, endpoint)
		}
		return &doc, nil
	}
	return nil, nil
}

// fetchJSON GETs the metadata document at u into v. found reports a 200
// answer: its error is then about the document (too large, not JSON).
func fetchJSON(ctx context.Context, client *http.Client, u string, v any) (found bool, err error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataBytes+1))
	if err != nil {
		return true, fmt.Errorf("%s: %w", u, err)
	}
	if len(body) > MaxMetadataBytes {
		return true, fmt.Errorf("%s: document larger than %d bytes", u, MaxMetadataBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return true, fmt.Errorf("%s: malformed JSON: %s", u, quoted(err.Error()))
	}
	return true, nil
}
