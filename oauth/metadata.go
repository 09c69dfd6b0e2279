package oauth

import (
	"fmt"
	"net/url"
)

// AuthServerMetadata is an authorization server's metadata (RFC 8414 §2,
// or OpenID Connect Discovery): what the resource server and the client
// use of it.
type AuthServerMetadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint         string `json:"token_endpoint,omitempty"`
	// RegistrationEndpoint is RFC 7591's, when the server has one.
	RegistrationEndpoint string `json:"registration_endpoint,omitempty"`
	JWKSURI              string `json:"jwks_uri,omitempty"`
	// IntrospectionEndpoint is RFC 7662's, when the server has one.
	IntrospectionEndpoint             string   `json:"introspection_endpoint,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	GrantTypesSupported               []string `json:"grant_types_supported,omitempty"`
	// ClientIDMetadataDocumentSupported: the server takes an https URL of
	// a client metadata document as client_id.
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
	// IssParameterSupported: authorization responses carry iss (RFC 9207).
	IssParameterSupported         bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`

	// URL is where the document was found; empty for Fallback.
	URL string `json:"-"`
	// Fallback marks endpoints guessed without a document (the 2025-03-26
	// MCP rules, DiscoverOptions.Fallback).
	Fallback bool `json:"-"`
}

// ProtectedResourceMetadata is the RFC 9728 document an MCP server
// publishes so that clients can find its authorization servers; clients
// read it with DiscoverProtectedResource.
type ProtectedResourceMetadata struct {
	// Resource is the canonical resource URI (required); the server
	// publishing it must be that resource.
	Resource string `json:"resource"`
	// AuthorizationServers lists the issuer URLs of the authorization
	// servers that mint tokens for this resource (at least one).
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported lists the scopes clients may request. It must not
	// contain offline_access.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported lists how tokens may be sent. Empty means
	// ["header"], the only method MCP uses.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceName is a human-readable name.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is a URL of documentation for developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// DPoPSigningAlgValuesSupported lists the DPoP proof algorithms
	// accepted (RFC 9449 §5.1); set it when DPoP is enabled.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired is true when every token must be
	// DPoP-bound.
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
}

// Validate checks m as a server publishes it and returns a copy with
// Resource canonical and BearerMethodsSupported defaulted to ["header"]:
// a canonical resource, at least one authorization server, each an
// http(s) URL without query or fragment, and scopes that are
// scope-tokens, offline_access not among them. Its errors wrap
// ErrMetadata.
func (m *ProtectedResourceMetadata) Validate() (*ProtectedResourceMetadata, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil protected resource metadata", ErrMetadata)
	}
	c := *m
	res, err := Canonical(m.Resource)
	if err != nil {
		return nil, fmt.Errorf("%w: resource: %w", ErrMetadata, err)
	}
	c.Resource = res
	if len(c.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("%w: authorization_servers needs at least one issuer", ErrMetadata)
	}
	for _, as := range c.AuthorizationServers {
		u, err := url.Parse(as)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("%w: authorization server %s is not an issuer URL", ErrMetadata, quoted(as))
		}
	}
	for _, s := range c.ScopesSupported {
		if s == "offline_access" {
			return nil, fmt.Errorf("%w: scopes_supported must not list offline_access", ErrMetadata)
		}
		if !IsScopeToken(s) {
			return nil, fmt.Errorf("%w: scope %s", ErrMetadata, quoted(s))
		}
	}
	if len(c.BearerMethodsSupported) == 0 {
		c.BearerMethodsSupported = []string{"header"}
	}
	return &c, nil
}
