package oauth

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// The well-known paths (RFC 8615) of the metadata documents. This package
// is the one place that spells them.
const (
	// WellKnownProtectedResource is RFC 9728 §3's, protected resource
	// metadata.
	WellKnownProtectedResource = "/.well-known/oauth-protected-resource"
	// WellKnownAuthServer is RFC 8414 §3's, authorization server metadata.
	WellKnownAuthServer = "/.well-known/oauth-authorization-server"
	// WellKnownOpenID is OpenID Connect Discovery 1.0 §4's.
	WellKnownOpenID = "/.well-known/openid-configuration"
)

// IsLoopbackHost reports whether host (without port or brackets) is
// "localhost" (any case) or a loopback IP address (127.0.0.0/8, ::1).
// It is the loopback rule of OAuth URLs (issuers, endpoints, redirect
// URLs). The Streamable HTTP handler's Host and Origin checks have their
// own, transport rule (package pmcp, http_security.go).
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckCredentialURL accepts the URLs that credentials or tokens are sent
// to, or keys are read from (token, authorization, registration
// endpoints, JWKS): an absolute URL with a host and without user
// information, https, or http whose host is a loopback host (local
// development and tests). Its errors wrap ErrCredentialURL.
func CheckCredentialURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" || u.User != nil {
		return nil, fmt.Errorf("%w: %s is not an absolute URL with a host and without user information", ErrCredentialURL, quoted(s))
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if IsLoopbackHost(u.Hostname()) {
			return u, nil
		}
		return nil, fmt.Errorf("%w: %s: http is accepted only on a loopback host", ErrCredentialURL, quoted(s))
	}
	return nil, fmt.Errorf("%w: %s is not https", ErrCredentialURL, quoted(s))
}

// CheckIssuerURL accepts an authorization server's issuer identifier
// (RFC 8414 §2): a URL CheckCredentialURL accepts, without query or
// fragment. Its errors wrap ErrCredentialURL.
func CheckIssuerURL(s string) (*url.URL, error) {
	u, err := CheckCredentialURL(s)
	if err != nil {
		return nil, err
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return nil, fmt.Errorf("%w: issuer %s has a query or fragment", ErrCredentialURL, quoted(s))
	}
	return u, nil
}
