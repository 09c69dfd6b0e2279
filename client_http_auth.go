package pmcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/oauth"
)

// Without HTTPClientOptions.Authorizer, a 401 gets the first, read-only
// step of MCP authorization: protected resource metadata discovery
// (RFC 9728) by oauth.DiscoverProtectedResource, the rule the OAuth flow
// (package oauthclient) uses too, so that the error says what the server
// wants and a metadata document naming another resource is rejected
// outright.

// ErrAuthorizationRequired: the server answered 401. The error names the
// authorization servers its protected resource metadata lists, when it
// could be read. Set HTTPClientOptions.Authorizer to have the client
// obtain a token, or pass one with HTTPClientOptions.Header.
var ErrAuthorizationRequired = errors.New("pmcp: the server requires authorization")

// ErrResourceMismatch: the server's protected resource metadata names a
// resource other than the endpoint; the client refuses to go on (a
// metadata document may only speak for the server that serves it). It is
// oauth.ErrResourceMismatch.
var ErrResourceMismatch = oauth.ErrResourceMismatch

// prmTimeout bounds the metadata discovery that explains a 401.
const prmTimeout = 10 * time.Second

// authError explains a 401 answer with the server's protected resource
// metadata (oauth.DiscoverProtectedResource: the challenge's
// resource_metadata URL when it is of the endpoint's origin or https,
// then the well-known URLs). header (HTTPClientOptions.Header) is sent
// only to the endpoint's origin.
func authError(ctx context.Context, client *http.Client, header http.Header, endpoint string, se *HTTPStatusError) error {
	ctx, cancel := context.WithTimeout(ctx, prmTimeout)
	defer cancel()
	challenge := oauth.ChallengeParam(oauth.ParseChallenges([]string{se.WWWAuthenticate}), "resource_metadata")
	prm, err := oauth.DiscoverProtectedResource(ctx, originHeaderClient(client, header, endpoint), endpoint, challenge)
	if errors.Is(err, oauth.ErrResourceMismatch) {
		return fmt.Errorf("%w: %w", err, se)
	}
	if err != nil || prm == nil {
		return fmt.Errorf("%w: %w", ErrAuthorizationRequired, se)
	}
	servers := make([]string, 0, min(len(prm.AuthorizationServers), 8))
	for i, s := range prm.AuthorizationServers {
		if i == 8 {
			break
		}
		servers = append(servers, capPeerString(s))
	}
	return fmt.Errorf("%w (OAuth; authorization servers %v; set HTTPClientOptions.Authorizer or pass a token in HTTPClientOptions.Header): %w",
		ErrAuthorizationRequired, servers, se)
}

// originHeaderClient is client with header added to the requests for
// endpoint's origin only: a metadata URL of another origin never sees the
// caller's headers, which may carry credentials. Headers a request
// already has (Accept) are kept.
func originHeaderClient(client *http.Client, header http.Header, endpoint string) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	origin, err := url.Parse(endpoint)
	if len(header) == 0 || err != nil {
		return client
	}
	c := *client
	c.Transport = originHeaders{base: client.Transport, origin: origin, header: header}
	return &c
}

// originHeaders adds header to the requests for origin.
type originHeaders struct {
	base   http.RoundTripper // nil: http.DefaultTransport
	origin *url.URL
	header http.Header
}

func (o originHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	base := o.base
	if base == nil {
		base = http.DefaultTransport
	}
	if !peer.SameOrigin(r.URL, o.origin) {
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range o.header {
		if _, set := r.Header[k]; !set {
			r.Header[k] = vs
		}
	}
	return base.RoundTrip(r)
}
