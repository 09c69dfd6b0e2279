package oauth

// Resource URIs. The one canonical form of an OAuth protected resource URI
// (an MCP server's RFC 8707 resource, the RFC 9728 metadata's "resource",
// a token's audience) and the comparisons built on it. The server's token
// checks (package auth), the client's OAuth flow and its
// protected-resource-metadata check and the pmcp CLI's credential store
// all compare resources with it, so a resource one of them accepts is the
// resource every other one accepts.
//
// The canonical form (RFC 3986 §6.2.2 and §6.2.3 normalisation as RFC 8707
// §2 and the MCP authorization rules ask):
//   - an absolute http or https URI with a non-empty host and no user
//     information; a fragment is refused;
//   - scheme and host in lower case; the scheme's default port (443, 80)
//     dropped, an empty port too;
//   - the bare origin without a path: "https://h/" is "https://h" (for
//     http(s) an empty path and "/" are the same, and MCP prefers the form
//     without the slash);
//   - any other path as given, percent-encoding normalised: a trailing
//     slash is significant, "https://h/mcp/" is not "https://h/mcp";
//   - the query, if any, kept; an empty one dropped.
//
// Two resources are the same iff their canonical forms are equal strings.

import (
	"fmt"
	"net/url"
	"strings"
)

// Error is why a URI is not a resource URI: it is not an absolute http(s)
// URI with a host, without user information or fragment.
type Error struct {
	URI    string // as given
	Reason string // for example "has a fragment"
}

func (e *Error) Error() string {
	return fmt.Sprintf("oauth: invalid resource URI %s: %s", quoted(e.URI), e.Reason)
}

// Is reports ErrInvalidResource, so every resource error matches it.
func (e *Error) Is(target error) bool { return target == ErrInvalidResource }

// Canonical returns the canonical form of resource (see the package
// documentation). Canonical(Canonical(s)) == Canonical(s).
func Canonical(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return "", &Error{URI: resource, Reason: err.Error()}
	}
	return canonicalURL(u, resource)
}

// CanonicalURL is Canonical of a parsed URI; u is not modified.
func CanonicalURL(u *url.URL) (string, error) {
	return canonicalURL(u, u.String())
}

func canonicalURL(in *url.URL, resource string) (string, error) {
	u := *in
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "https" && u.Scheme != "http") || u.Opaque != "" || u.User != nil || u.Hostname() == "" {
		return "", &Error{URI: resource, Reason: "not an absolute http(s) URI with a host and without user information"}
	}
	if u.Fragment != "" || u.RawFragment != "" || strings.Contains(resource, "#") {
		return "", &Error{URI: resource, Reason: "has a fragment"}
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
	if u.Path == "/" {
		u.Path = ""
	}
	u.RawPath = ""
	u.ForceQuery = false
	return u.String(), nil
}

// Same reports whether a and b name the same resource: both canonicalise
// and the canonical forms are equal. A URI that does not canonicalise is
// the same as nothing.
func Same(a, b string) bool {
	ca, err := Canonical(a)
	if err != nil {
		return false
	}
	cb, err := Canonical(b)
	return err == nil && ca == cb
}

// AudienceHas reports whether a token's audience list aud names the
// canonical resource canon (a value equal to it, or one whose canonical
// form is).
func AudienceHas(aud []string, canon string) bool {
	for _, a := range aud {
		if a == canon {
			return true
		}
		if c, err := Canonical(a); err == nil && c == canon {
			return true
		}
	}
	return false
}

// Covers reports whether resource designates endpoint: the same resource,
// or, for a resource without a query, one whose path is the endpoint's or
// a prefix of it at a segment boundary, whatever the endpoint's query
// ("https://h/api" covers "https://h/api/mcp" and "https://h/api?x=1", and
// so does "https://h/api/"; "https://h/api/" does not cover "https://h/api").
// The comparison is of canonical forms; a URI that does not canonicalise
// covers nothing and is covered by nothing.
func Covers(resource, endpoint string) bool {
	r, err := Canonical(resource)
	if err != nil {
		return false
	}
	e, err := Canonical(endpoint)
	if err != nil {
		return false
	}
	if r == e {
		return true
	}
	if strings.Contains(r, "?") {
		return false
	}
	e, _, _ = strings.Cut(e, "?")
	if r == e {
		return true
	}
	if !strings.HasSuffix(r, "/") {
		r += "/"
	}
	return strings.HasPrefix(e, r)
}
