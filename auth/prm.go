package auth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gopmcp/pmcp/oauth"
)

// WellKnownPath is the well-known path of protected resource metadata
// (RFC 9728 §3).
//
// Deprecated: it is oauth.WellKnownProtectedResource; this name goes in
// the next release.
const WellKnownPath = oauth.WellKnownProtectedResource

// ProtectedResourceMetadata is the RFC 9728 document an MCP server
// publishes so that clients can find its authorization servers. Its
// Resource must equal the Authenticator's Resource.
//
// Deprecated: it is oauth.ProtectedResourceMetadata, the one type of the
// server and the client; this name goes in the next release.
type ProtectedResourceMetadata = oauth.ProtectedResourceMetadata

// MetadataURL returns the path-inserted well-known URL of the protected
// resource metadata for resource (RFC 9728 §3.1).
//
// Deprecated: use oauth.ProtectedResourceMetadataURL; this wrapper goes
// in the next release.
func MetadataURL(resource string) (string, error) {
	return oauth.ProtectedResourceMetadataURL(resource)
}

// ErrInvalidMetadata: a ProtectedResourceMetadata breaks a rule of RFC
// 9728 or of MCP.
//
// Deprecated: it is oauth.ErrMetadata; this name goes in the next
// release.
var ErrInvalidMetadata = oauth.ErrMetadata

// ProtectedResourceMetadataHandler serves m as JSON to GET and HEAD
// (with "Access-Control-Allow-Origin: *", since the document is public
// and browser-based clients read it), answers CORS preflight, and gives
// 405 to other methods. It refuses a document without authorization
// servers, with a non-canonical resource or with offline_access among
// the scopes.
func ProtectedResourceMetadataHandler(m *oauth.ProtectedResourceMetadata) (http.Handler, error) {
	c, err := m.Validate()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", oauth.ErrMetadata, err)
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
// /mcp, oauth.WellKnownProtectedResource followed by /mcp) and, when that
// differs, at the root form (oauth.WellKnownProtectedResource alone),
// which clients try next. It returns the path-inserted URL, the one to put in
// Options.ResourceMetadataURL (the Authenticator derives the same URL by
// default).
func MountProtectedResourceMetadata(mux *http.ServeMux, m *oauth.ProtectedResourceMetadata) (string, error) {
	h, err := ProtectedResourceMetadataHandler(m)
	if err != nil {
		return "", err
	}
	full, _ := oauth.ProtectedResourceMetadataURL(m.Resource) // validated above
	u, _ := url.Parse(full)
	mux.Handle(u.EscapedPath(), h)
	if u.Path != oauth.WellKnownProtectedResource {
		mux.Handle(oauth.WellKnownProtectedResource, h)
	}
	return full, nil
}
