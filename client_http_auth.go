package pmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/oauth"
)

// Without HTTPClientOptions.Authorizer, a 401 gets the first, read-only
// step of MCP authorization (RFC 9728 protected resource metadata
// discovery), so that the error says what the server wants and a metadata
// document naming another resource is rejected outright; the OAuth flow
// itself is in package oauthclient.

// ErrAuthorizationRequired: the server answered 401. The error names the
// authorization servers its protected resource metadata lists, when it
// could be read. Set HTTPClientOptions.Authorizer to have the client
// obtain a token, or pass one with HTTPClientOptions.Header.
var ErrAuthorizationRequired = errors.New("pmcp: the server requires authorization")

// ErrResourceMismatch: the server's protected resource metadata names a
// resource other than the endpoint; the client refuses to go on (a
// metadata document may only speak for the server that serves it).
var ErrResourceMismatch = errors.New("pmcp: protected resource metadata names another resource")

const (
	prmMaxBytes = 64 << 10
	prmTimeout  = 10 * time.Second
)

// authError explains a 401 answer, reading the server's protected
// resource metadata from the same origin as the endpoint.
func authError(ctx context.Context, client *http.Client, header http.Header, endpoint string, se *HTTPStatusError) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAuthorizationRequired, se)
	}
	var candidates []string
	if m := authParam(se.WWWAuthenticate, "resource_metadata"); m != "" {
		if mu, err := u.Parse(m); err == nil && peer.SameOrigin(u, mu) {
			candidates = append(candidates, mu.String())
		}
	}
	wk := &url.URL{Scheme: u.Scheme, Host: u.Host}
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		wk.Path = "/.well-known/oauth-protected-resource" + p
		candidates = append(candidates, wk.String())
	}
	wk.Path = "/.well-known/oauth-protected-resource"
	candidates = append(candidates, wk.String())

	ctx, cancel := context.WithTimeout(ctx, prmTimeout)
	defer cancel()
	for _, c := range candidates {
		prm, ok := fetchPRM(ctx, client, header, c)
		if !ok {
			continue
		}
		if !sameResource(prm.Resource, u) {
			return fmt.Errorf("%w: %q (metadata at %s) is not %s: %w", ErrResourceMismatch, capPeerString(prm.Resource), c, endpoint, se)
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
	return fmt.Errorf("%w: %w", ErrAuthorizationRequired, se)
}

type protectedResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
}

func fetchPRM(ctx context.Context, client *http.Client, header http.Header, u string) (*protectedResourceMetadata, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, prmMaxBytes+1))
	if err != nil || len(b) > prmMaxBytes {
		return nil, false
	}
	var prm protectedResourceMetadata
	if json.Unmarshal(b, &prm) != nil || prm.Resource == "" {
		return nil, false
	}
	return &prm, true
}

// sameResource reports whether the resource identifier res designates the
// endpoint u: the same resource, or one whose path is a prefix of the
// endpoint's at a segment boundary, compared in the one canonical form of
// resources (package oauth) the server's token checks use too.
func sameResource(res string, u *url.URL) bool {
	return oauth.Covers(res, u.String())
}

// authParam extracts an auth-param of a WWW-Authenticate challenge
// (quoted or token form).
func authParam(h, name string) string {
	lower := strings.ToLower(h)
	for i := 0; ; {
		j := strings.Index(lower[i:], name+"=")
		if j < 0 {
			return ""
		}
		j += i
		if j > 0 && lower[j-1] != ' ' && lower[j-1] != ',' && lower[j-1] != '\t' {
			i = j + len(name)
			continue
		}
		v := h[j+len(name)+1:]
		if strings.HasPrefix(v, `"`) {
			if k := strings.IndexByte(v[1:], '"'); k >= 0 {
				return v[1 : k+1]
			}
			return ""
		}
		if k := strings.IndexAny(v, ", \t"); k >= 0 {
			v = v[:k]
		}
		return v
	}
}
