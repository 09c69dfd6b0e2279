package oauthclient

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gopmcp/pmcp/oauth"
)

// ErrMetadata: no usable authorization server or protected resource
// metadata. It is oauth.ErrMetadata.
var ErrMetadata = oauth.ErrMetadata

// ErrIssuerMismatch: an authorization server identified itself with
// another issuer, in its metadata or in the iss parameter of an
// authorization response (RFC 8414 §3.3, RFC 9207). The client stops. It
// is oauth.ErrIssuerMismatch.
var ErrIssuerMismatch = oauth.ErrIssuerMismatch

// discoverAS reads the metadata of the authorization server issuer with
// oauth.DiscoverAuthServer (fallback: the 2025-03-26 rules, without
// protected resource metadata) and requires what the client needs of it,
// a token endpoint.
func discoverAS(ctx context.Context, client *http.Client, issuer string, fallback bool) (*oauth.AuthServerMetadata, error) {
	m, err := oauth.DiscoverAuthServer(ctx, client, issuer, oauth.DiscoverOptions{Fallback: fallback})
	if err != nil {
		return nil, err
	}
	if m.TokenEndpoint == "" {
		return nil, fmt.Errorf("%w: %s lists no token_endpoint", oauth.ErrMetadata, m.URL)
	}
	return m, nil
}
