package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gopmcp/pmcp/oauth"
)

// Limits of authorization server metadata discovery.
const (
	// DefaultMetadataMaxBytes caps an authorization server metadata
	// document.
	DefaultMetadataMaxBytes = 256 << 10
	// DefaultMetadataTimeout bounds the whole discovery (every URL tried).
	DefaultMetadataTimeout = 10 * time.Second
)

// ErrIssuerMetadata is the cause of every DiscoverIssuer failure.
var ErrIssuerMetadata = errors.New("auth: authorization server metadata")

// IssuerMetadata is what a resource server needs from its authorization
// server's metadata (RFC 8414, or OpenID Connect Discovery).
type IssuerMetadata struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
	// IntrospectionEndpoint is RFC 7662's, when the server has one.
	IntrospectionEndpoint string   `json:"introspection_endpoint,omitempty"`
	ScopesSupported       []string `json:"scopes_supported,omitempty"`
	// URL is where the document was found.
	URL string `json:"-"`
}

// DiscoverIssuer fetches the metadata of the authorization server issuer
// and returns it once its "issuer" equals issuer exactly and its jwks_uri
// is usable. The URLs are tried in the order MCP clients use: RFC 8414
// (/.well-known/oauth-authorization-server inserted before the issuer's
// path), then OpenID Connect Discovery path-inserted and appended
// (/.well-known/openid-configuration); for an issuer without a path, the
// first two are the plain well-known URLs.
//
// The issuer must be https, except http on a loopback address
// (localhost, 127.0.0.0/8, [::1]) for local development; the same holds
// for the jwks_uri. Documents are capped at DefaultMetadataMaxBytes and
// the whole discovery at DefaultMetadataTimeout (or ctx's deadline). A nil
// client means http.DefaultClient.
func DiscoverIssuer(ctx context.Context, client *http.Client, issuer string) (*IssuerMetadata, error) {
	u, err := checkIssuerURL(issuer)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultMetadataTimeout)
	defer cancel()
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	candidates := []string{origin + "/.well-known/oauth-authorization-server" + path}
	if path == "" {
		candidates = append(candidates, origin+"/.well-known/openid-configuration")
	} else {
		candidates = append(candidates, origin+"/.well-known/openid-configuration"+path, origin+path+"/.well-known/openid-configuration")
	}
	var errs []error
	for _, c := range candidates {
		m, err := fetchIssuerMetadata(ctx, client, c)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if m.Issuer != issuer {
			// RFC 8414 §3.3: a document naming another issuer is not used.
			return nil, fmt.Errorf("%w: %s names issuer %q, not %q", ErrIssuerMetadata, c, m.Issuer, issuer)
		}
		if m.JWKSURI == "" {
			return nil, fmt.Errorf("%w: %s has no jwks_uri", ErrIssuerMetadata, c)
		}
		if _, err := checkIssuerURL(m.JWKSURI); err != nil {
			return nil, fmt.Errorf("%w: jwks_uri: %w", ErrIssuerMetadata, err)
		}
		m.URL = c
		return m, nil
	}
	return nil, fmt.Errorf("%w: none found for %s: %w", ErrIssuerMetadata, issuer, errors.Join(errs...))
}

func fetchIssuerMetadata(ctx context.Context, client *http.Client, u string) (*IssuerMetadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMetadataMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if len(body) > DefaultMetadataMaxBytes {
		return nil, fmt.Errorf("%s: document larger than %d bytes", u, DefaultMetadataMaxBytes)
	}
	var m IssuerMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return &m, nil
}

// checkIssuerURL is oauth.CheckIssuerURL with the error of this file.
func checkIssuerURL(s string) (*url.URL, error) {
	u, err := oauth.CheckIssuerURL(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIssuerMetadata, err)
	}
	return u, nil
}

// IsLoopbackHost reports whether host (without port or brackets) is
// "localhost" or a loopback IP address.
//
// Deprecated: use oauth.IsLoopbackHost, the one loopback rule of OAuth
// URLs; this wrapper goes in the next release.
func IsLoopbackHost(host string) bool { return oauth.IsLoopbackHost(host) }
