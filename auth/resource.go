package auth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrInvalidResource: a resource URI is not an absolute http(s) URI
// without a fragment.
var ErrInvalidResource = errors.New("auth: invalid resource URI")

// CanonicalResource returns the canonical form of an MCP server's resource
// URI (RFC 8707 and the MCP authorization rules): scheme and host in lower
// case, the default port dropped, no fragment, and no trailing slash. The
// query, if any, is kept. It is the form tokens are checked against and the
// "resource" of the protected resource metadata.
func CanonicalResource(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrInvalidResource, resource, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("%w: %q is not an absolute http(s) URI", ErrInvalidResource, resource)
	}
	if u.Fragment != "" || strings.Contains(resource, "#") {
		return "", fmt.Errorf("%w: %q has a fragment", ErrInvalidResource, resource)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.ForceQuery = false
	return u.String(), nil
}

// sameResource reports whether a (from a token) names the canonical
// resource canon.
func sameResource(a, canon string) bool {
	if a == canon {
		return true
	}
	c, err := CanonicalResource(a)
	return err == nil && c == canon
}
