package oauth

import (
	"errors"
	"strconv"
)

// Errors of this package; every error it returns wraps one of them, for
// errors.Is.
var (
	// ErrMetadata: no usable metadata document (authorization server or
	// protected resource): a URL that may not be used, none found, one
	// that does not parse, is too large, or lacks a required member.
	ErrMetadata = errors.New("oauth: metadata unusable")
	// ErrIssuerMismatch: an authorization server's metadata names another
	// issuer (RFC 8414 §3.3). An error with it also wraps ErrMetadata.
	ErrIssuerMismatch = errors.New("oauth: issuer mismatch")
	// ErrResourceMismatch: protected resource metadata names a resource
	// that does not cover the endpoint (RFC 9728 §3.3). An error with it
	// also wraps ErrMetadata.
	ErrResourceMismatch = errors.New("oauth: protected resource metadata names another resource")
	// ErrInvalidResource: a resource URI is not an absolute http(s) URI
	// with a host, without user information or fragment; every *Error
	// matches it.
	ErrInvalidResource = errors.New("oauth: invalid resource URI")
	// ErrCredentialURL: a URL that credentials or tokens would be sent
	// to, or keys read from, is neither https nor http to a loopback host
	// (see CheckCredentialURL).
	ErrCredentialURL = errors.New("oauth: not an https URL or an http URL of a loopback host")
)

// maxQuoted caps a peer-controlled string quoted in an error.
const maxQuoted = 256

// quoted is s for an error message: cut at maxQuoted bytes and quoted
// with %q escapes, so a peer's string can neither flood nor forge a log
// line.
func quoted(s string) string {
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "..."
	}
	return strconv.Quote(s)
}
