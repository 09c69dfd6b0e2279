package auth

import "github.com/gopmcp/pmcp/oauth"

// ErrInvalidResource: a resource URI is not an absolute http(s) URI
// with a host, without user information or fragment.
//
// Deprecated: it is oauth.ErrInvalidResource; this name goes in the next
// release.
var ErrInvalidResource = oauth.ErrInvalidResource

// CanonicalResource returns the canonical form of an MCP server's resource
// URI (RFC 8707 and the MCP authorization rules), the form tokens are
// checked against; its errors match ErrInvalidResource.
//
// Deprecated: use oauth.Canonical, the one rule of the server, the client
// and the pmcp CLI; this wrapper goes in the next release.
func CanonicalResource(resource string) (string, error) { return oauth.Canonical(resource) }
