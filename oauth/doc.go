// Package oauth is the OAuth protocol as MCP uses it, for both roles:
// the canonical form of resource URIs and audiences, the loopback and
// credential-URL rules, the well-known paths, authorization server
// (RFC 8414, OpenID Connect Discovery) and protected resource (RFC 9728)
// metadata and their discovery, and the WWW-Authenticate challenge in
// both directions (format and parse). The resource server (package auth)
// and the OAuth client both use it, so that a rule one of them applies is
// the rule the other applies.
//
// It is a leaf: it imports only the standard library and go-jose, never
// package pmcp (which imports it), so every part of pmcp can use it.
package oauth
