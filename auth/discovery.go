package auth

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gopmcp/pmcp/oauth"
)

// Limits of authorization server metadata discovery.
const (
	// DefaultMetadataMaxBytes caps an authorization server metadata
	// document.
	//
	// Deprecated: it is oauth.MaxMetadataBytes, the one cap of metadata
	// documents; this name goes in the next release.
	DefaultMetadataMaxBytes = oauth.MaxMetadataBytes
	// DefaultMetadataTimeout bounds the whole discovery (every URL tried).
	DefaultMetadataTimeout = 10 * time.Second
)

// ErrIssuerMetadata is the cause of every DiscoverIssuer failure.
//
// Deprecated: it is oauth.ErrMetadata; this name goes in the next
// release.
var ErrIssuerMetadata = oauth.ErrMetadata

// IssuerMetadata is an authorization server's metadata (RFC 8414, or
// OpenID Connect Discovery).
//
// Deprecated: it is oauth.AuthServerMetadata, the one type of the server
// and the client; this name goes in the next release.
type IssuerMetadata = oauth.AuthServerMetadata

// DiscoverIssuer fetches the metadata of the authorization server issuer
// with oauth.DiscoverAuthServer (its URLs, order and checks) and returns
// it once it has a jwks_uri, the one endpoint a resource server needs.
// The whole discovery is bounded by DefaultMetadataTimeout (or ctx's
// deadline). A nil client means http.DefaultClient. Its errors match
// oauth.ErrMetadata.
//
// Deprecated: use oauth.DiscoverAuthServer and check JWKSURI; this
// wrapper goes in the next release.
func DiscoverIssuer(ctx context.Context, client *http.Client, issuer string) (*oauth.AuthServerMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultMetadataTimeout)
	defer cancel()
	m, err := oauth.DiscoverAuthServer(ctx, client, issuer, oauth.DiscoverOptions{})
	if err != nil {
		return nil, err
	}
	if m.JWKSURI == "" {
		return nil, fmt.Errorf("%w: %s has no jwks_uri", oauth.ErrMetadata, m.URL)
	}
	return m, nil
}

// IsLoopbackHost reports whether host (without port or brackets) is
// "localhost" or a loopback IP address.
//
// Deprecated: use oauth.IsLoopbackHost, the one loopback rule of OAuth
// URLs; this wrapper goes in the next release.
func IsLoopbackHost(host string) bool { return oauth.IsLoopbackHost(host) }
