package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// WellKnownPath is the well-known path of protected resource metadata
// (RFC 9728 §3).
const WellKnownPath = "/.well-known/oauth-protected-resource"

// ProtectedResourceMetadata is the RFC 9728 document an MCP server
// publishes so that clients can find its authorization servers.
type ProtectedResourceMetadata struct {
	// Resource is the canonical resource URI (required); it must equal
	// the Authenticator's Resource.
	Resource string `json:"resource"`
	// AuthorizationServers lists the issuer URLs of the authorization
	// servers that mint tokens for this resource (at least one).
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported lists the scopes clients may request. It must not
	// contain offline_access.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported lists how tokens may be sent. Empty means
	// ["header"], the only method pmcp accepts.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceName is a human-readable name.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is a URL of documentation for developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// DPoPSigningAlgValuesSupported lists the DPoP proof algorithms
	// accepted (RFC 9449 §5.1); set it when DPoP is enabled.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired is true with DPoPRequired.
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
}

// MetadataURL returns the path-inserted well-known URL of the protected
// resource metadata for resource (RFC 9728 §3.1): the well-known path
// goes between the host and the resource's path, so
// https://example.com/public/mcp gives
// https://example.com/.well-known/oauth-protected-resource/public/mcp.
func MetadataURL(resource string) (string, error) {
	res, err := CanonicalResource(resource)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(res) // canonical
	u.Path = WellKnownPath + u.Path
	u.RawPath = ""
	return u.String(), nil
}

// ErrInvalidMetadata: a ProtectedResourceMetadata breaks a rule of RFC
// 9728 or of MCP.
var ErrInvalidMetadata = errors.New("auth: invalid protected resource metadata")

// validate checks m and returns a copy with Resource canonical and
// defaults filled in.
func (m *ProtectedResourceMetadata) validate() (*ProtectedResourceMetadata, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil", ErrInvalidMetadata)
	}
	c := *m
	res, err := CanonicalResource(m.Resource)
	if err != nil {
		return nil, fmt.Errorf("%w: resource: %w", ErrInvalidMetadata, err)
	}
	c.Resource = res
	if len(c.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("%w: authorization_servers needs at least one issuer", ErrInvalidMetadata)
	}
	for _, as := range c.AuthorizationServers {
		u, err := url.Parse(as)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("%w: authorization server %q is not an issuer URL", ErrInvalidMetadata, as)
		}
	}
	for _, s := range c.ScopesSupported {
		if s == "offline_access" {
			return nil, fmt.Errorf("%w: scopes_supported must not list offline_access", ErrInvalidMetadata)
		}
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return nil, fmt.Errorf("%w: scope %q", ErrInvalidMetadata, s)
		}
	}
	if len(c.BearerMethodsSupported) == 0 {
		c.BearerMethodsSupported = []string{"header"}
	}
	return &c, nil
}

// ProtectedResourceMetadataHandler serves m as JSON to GET and HEAD
// (with "Access-Control-Allow-Origin: *", since the document is public
// and browser-based clients read it), answers CORS preflight, and gives
// 405 to other methods. It refuses a document without authorization
// servers, with a non-canonical resource or with offline_access among
// the scopes.
func ProtectedResourceMetadataHandler(m *ProtectedResourceMetadata) (http.Handler, error) {
	c, err := m.validate()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "public, max-age=3600")
			h.Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(body)
			}
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "MCP-Protocol-Version")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	}), nil
}

// MountProtectedResourceMetadata registers the metadata handler on mux
// at the path-inserted well-known path of m.Resource (for a resource at
// /mcp, /.well-known/oauth-protected-resource/mcp) and, when that differs,
// at the root form /.well-known/oauth-protected-resource, which clients
// try next. It returns the path-inserted URL, the one to put in
// Options.ResourceMetadataURL (the Authenticator derives the same URL by
// default).
func MountProtectedResourceMetadata(mux *http.ServeMux, m *ProtectedResourceMetadata) (string, error) {
	h, err := ProtectedResourceMetadataHandler(m)
	if err != nil {
		return "", err
	}
	full, _ := MetadataURL(m.Resource) // validated above
	u, _ := url.Parse(full)
	mux.Handle(u.EscapedPath(), h)
	if u.Path != WellKnownPath {
		mux.Handle(WellKnownPath, h)
	}
	return full, nil
}
