// Package auth is the resource-server half of MCP authorization for
// pmcp's Streamable HTTP handler: it checks OAuth 2.1 access tokens,
// publishes RFC 9728 protected resource metadata, and answers with the
// exact challenges of RFC 6750 (and RFC 9449 for DPoP). The protocol it
// speaks (the canonical form of resources and audiences, metadata
// documents and their discovery, the challenge grammar, the DPoP htu) is
// package oauth, which the OAuth client uses too; auth is the server role.
//
// Quick start, for an MCP server at https://mcp.example.com/mcp whose
// tokens come from https://as.example.com:
//
//	const resource = "https://mcp.example.com/mcp"
//	verifier, err := auth.NewJWTVerifier(auth.JWTOptions{
//		JWKSURL:  "https://as.example.com/jwks.json",
//		Issuer:   "https://as.example.com",
//		Audience: resource, // required: tokens minted for other servers are refused
//	})
//	if err != nil { ... }
//	authn, err := auth.NewAuthenticator(auth.Options{
//		Verifier: verifier,
//		Resource: resource,
//		Scopes:   []string{"mcp:tools"},
//	})
//	if err != nil { ... }
//	mux := http.NewServeMux()
//	// The path-inserted well-known path (oauth.WellKnownProtectedResource
//	// + "/mcp") and the root form.
//	if _, err := auth.MountProtectedResourceMetadata(mux, &oauth.ProtectedResourceMetadata{
//		Resource:             resource,
//		AuthorizationServers: []string{"https://as.example.com"},
//		ScopesSupported:      []string{"mcp:tools"},
//	}); err != nil { ... }
//	mux.Handle("/mcp", pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{
//		Authenticate:      authn.Authenticate,
//		InsufficientScope: authn.InsufficientScope, // per-tool scopes (Tool.Scopes)
//	}))
//
// Tool handlers then find the caller in RequestHandlerExtra.AuthContext
// (Subject, ClientID, Scopes, Claims) and the credential in
// RequestHandlerExtra.AuthInfo (the token as a pmcp.Secret, which never
// prints). Legacy sessions and modern multi-round-trip request state are
// bound to the Subject.
//
// # Answers
//
// No token: 401 with `WWW-Authenticate: Bearer resource_metadata="…",
// scope="…"`. A token that is refused: the same plus error="invalid_token"
// and error_description. A malformed Authorization header (two headers, a
// scheme without a token, characters outside the b64token grammar): 400
// error="invalid_request". A token lacking Options.Scopes: 403
// error="insufficient_scope" naming every scope needed, so that a client
// steps up once. The error returned is a *pmcp.AuthError, which the
// Streamable HTTP handler turns into that answer.
//
// Authenticator.InsufficientScope builds the same 403 for the scopes a
// single operation needs: a tool, prompt or resource registered with
// Scopes (pmcp.Tool.Scopes, ...) is checked by the Streamable HTTP
// handler before dispatch, and a caller lacking one gets this challenge,
// naming Options.Scopes and the operation's scopes. Scoped tools stay in
// tools/list so that clients can discover them and step up.
//
// # Verifiers
//
// JWTVerifier checks JWT access tokens (RFC 9068) against a remote JWKS,
// built on go-jose: signature with an algorithm of an asymmetric
// allow-list (never "none", never HMAC, so a public key can not be used
// as an HMAC secret), "iss", "aud" containing the resource, "exp"
// (required), "nbf" and "iat" with a leeway, optionally typ "at+jwt". The
// JWKS is fetched on first use and refetched when old and on an unknown
// key id (one such refresh per DefaultJWKSRefreshMinInterval), with
// bounded size and time; a failed fetch is not retried within that
// interval. Tokens that pass are remembered (DefaultVerifiedTokenCacheSize,
// keyed by the token's SHA-256) so that a token sent again skips the
// signature check; a remembered token still has exp, nbf and iat checked
// on every request, is forgotten at its exp, and is refused once the key
// that signed it leaves the key set. IntrospectionVerifier checks opaque tokens with RFC 7662
// and caches active results, bounded in count and by each token's exp.
// Any other TokenVerifier can be plugged in.
//
// # DPoP
//
// With Options.DPoP set, requests may (DPoPAllowed) or must
// (DPoPRequired) use `Authorization: DPoP` with a DPoP proof (RFC 9449):
// the proof's signature, typ, htm, htu, iat window, ath and the token's
// cnf.jkt binding are checked, and each jti is accepted once (a bounded
// replay cache). A failed proof gets 401 with a
// `WWW-Authenticate: DPoP … error="invalid_dpop_proof"` challenge. A
// token bound to a key is never accepted as a plain bearer token.
package auth
