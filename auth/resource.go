package auth

import (
	"errors"
	"fmt"

	"github.com/gopmcp/pmcp/oauth"
)

// ErrInvalidResource: a resource URI is not an absolute http(s) URI
// with a host, without user information or fragment.
var ErrInvalidResource = errors.New("auth: invalid resource URI")

// CanonicalResource returns the canonical form of an MCP server's resource
// URI (RFC 8707 and the MCP authorization rules): scheme and host in lower
// case, the default port dropped, no fragment, the bare origin without a
// path ("https://h/" is "https://h"); any other path is kept as given, so
// "https://h/mcp/" and "https://h/mcp" are different resources. The query,
// if any, is kept. It is the form tokens are checked against and the
// "resource" of the protected resource metadata; two resources are the
// same iff their canonical forms are equal. The pmcp client and the pmcp
// CLI compare resources by the same rule.
func CanonicalResource(resource string) (string, error) {
	c, err := oauth.Canonical(resource)
	if e := (*oauth.Error)(nil); errors.As(err, &e) {
		return "", fmt.Errorf("%w: %q: %s", ErrInvalidResource, e.URI, e.Reason)
	}
	return c, nil
}

// sameResource reports whether a (from a token) names the canonical
// resource canon.
func sameResource(a, canon string) bool {
	if a == canon {
		return true
	}
	c, err := oauth.Canonical(a)
	return err == nil && c == canon
}
